// `rankcert profile` (UNTRUSTED search): see src/producer/profile.cpp.
#pragma once

#include "rankcert/producer/producer.hpp"

namespace rankcert::producer {

// The intrinsic interaction C = P_n (log A) P_N in floating point (qk:
// s t (P_n Q)(P_N K)^T).  Unmasked instances only.
Mat interaction(const Instance& inst);

struct ProfileCandidate {
    std::size_t r = 0;
    double q = 0, tau = 0, kappa_low = 0, kappa_up = 0;  // float values
    double tau_star = -1;                                // exact induced error (when A is given)
    json cert;                                           // the profile certificate
};

// T = rank-r truncated SVD of C, an optimised gauge, dual weights.
// With A (float attention), also the exact induced error tau*.
ProfileCandidate profile_candidate(const Mat& C, std::size_t r, const std::string& dir, const std::string& stem,
                                   const Mat* A = nullptr);

// The size of T_r = rank-r truncation of C in the given Q/K coordinates
// projected on the retained subspace (qk only; -1 otherwise).  Always at
// least kappa(T_r), since it is the size of one factorisation of T_r.
double native_size(const Instance& inst, const Mat& C, std::size_t r);

}  // namespace rankcert::producer
