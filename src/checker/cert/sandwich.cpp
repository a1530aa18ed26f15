// sandwich: an upper bound through the Gibbs matrix of T (docs/theory.md,
// "Extensions: profile and sandwich certificates").
//
// ||A_i - B_i||_1 <= ||A_i - A~_i||_1 + ||A~_i - B_i||_1 <= t + (eps - t):
// a factor B = U W^T within eps - t of the Gibbs matrix A~ of T = X Y^T, with
// every row's induced error ||A_i - A~_i||_1 <= t, proves r_eps(A) <= k.
// Both inequalities are decided row by row on the precision ladder.
#include "../interaction.hpp"
#include "common.hpp"
#include "units.hpp"

#include <memory>

namespace rankcert::cert {

namespace {

// Row i: (|A_i - A~_i|_1, |A~_i - B_i|_1).
class SandwichRows : public rows::RowQuantity {
public:
    SandwichRows(const Instance& I, const SandwichCert& c)
        : I_(I), c_(c), Cexact_(I.kind == InstanceKind::logits ? centred_logits(I.logits) : std::vector<Rat>()) {}
    std::size_t count() const override { return I_.n; }
    std::size_t values() const override { return 2; }
    void prepare(slong prec) override {
        rows_ = std::make_unique<InteractionRows>(I_, c_.x, c_.y, c_.r, prec, Cexact_);
        enclose_matrix(c_.u, prec, u_);
        enclose_matrix(c_.w, prec, w_);
        prec_ = prec;
    }
    void eval(std::size_t i, arb_ptr out) const override {
        const std::size_t N = I_.N, k = c_.u.cols;
        BallVec R(N), A(N), At(N), B(N);
        rows_->residual(i, R.data());
        rows_->gibbs(i, R.data(), A.data(), At.data());
        for (std::size_t j = 0; j < N; ++j)
            arb_dot(B[j], nullptr, 0, u_[i * k], 1, w_[j * k], 1, static_cast<slong>(k), prec_);
        enclose_l1_distance(out, A.data(), At.data(), N, prec_);
        enclose_l1_distance(out + 1, At.data(), B.data(), N, prec_);
    }

private:
    const Instance& I_;
    const SandwichCert& c_;
    const std::vector<Rat> Cexact_;
    std::unique_ptr<InteractionRows> rows_;
    BallVec u_, w_;
    slong prec_ = 64;
};

}  // namespace

void parse_sandwich(const json& c, const Where& w, const Instance& I, ArrayLoader& L, Certificate& cert) {
    if (I.has_mask()) throw InputError(w, "a sandwich certificate needs an unmasked instance");
    SandwichCert s;
    s.r = parse_index(require(c, "r", w), w.key("r"), 1u << 16);
    s.x = load_shaped(c, "x", w, L, I.n, s.r, "n x r");
    s.y = load_shaped(c, "y", w, L, I.N, s.r, "N x r");
    s.tau_star = parse_rational(require(c, "tau_star", w), w.key("tau_star"));
    if (s.tau_star.sign() < 0) throw InputError(w.key("tau_star"), "must be >= 0");
    s.u = L.load(require(c, "u", w), w.key("u"));
    s.w = L.load(require(c, "w", w), w.key("w"));
    expect_shape(s.u, I.n, s.u.cols, w.key("u"), "n x k");
    expect_shape(s.w, I.N, s.u.cols, w.key("w"), "N x k");
    check_rank(c, w, s.u.cols, cert, true);
    cert.data = std::move(s);
}

CertResult check_sandwich(const Instance& I, const Rat& eps, const Certificate& cert, const CheckOptions& opt) {
    const auto& s = cert.as<SandwichCert>();
    CertResult res = result_for(cert);
    const Rat& t = s.tau_star;
    const Rat rest = eps - t;
    if (rest.sign() < 0) {
        res.verdict = Verdict::refuted;
        res.precision = "exact";
        res.detail = "tau* bound " + t.str() + " exceeds eps";
        res.decisive = {{"tau_star_bound", t.str()}, {"eps", eps.str()}};
        return res;
    }
    SandwichRows q(I, s);
    const rows::RowOutcome o = rows::decide_rows(q, {{t, false}, {rest, false}}, opt, "sandwich");
    res.verdict = o.verdict;
    res.precision = o.precision;
    res.decisive = {{"tau_star_bound", t.str()}, {"eps_minus_tau", rest.str()}};
    if (o.verdict == Verdict::verified) {
        res.decisive["worst_a_minus_gibbs"] = endpoints_json(o.worst[0]);
        res.decisive["worst_gibbs_minus_b"] = endpoints_json(o.worst[1]);
        res.detail = "every row: |A_i - A~_i|_1 <= " + t.str() + " and |A~_i - B_i|_1 <= eps - tau*";
        return res;
    }
    res.decisive["row"] = o.row;
    res.decisive["a_minus_gibbs"] = endpoints_json(o.enclosure[0]);
    res.decisive["gibbs_minus_b"] = endpoints_json(o.enclosure[1]);
    if (o.verdict == Verdict::refuted)
        res.detail = "row " + std::to_string(o.row) + ": " +
                     (cmp(o.enclosure[0].lo, t) > 0 ? "|A_i - A~_i|_1 exceeds tau* bound " + t.str()
                                                    : "|A~_i - B_i|_1 exceeds eps - tau* = " + rest.str());
    else
        res.detail = std::to_string(o.undecided_rows) + " rows undecided";
    return res;
}

std::string describe_sandwich(const Certificate& c) {
    const auto& s = c.as<SandwichCert>();
    return "T of rank " + std::to_string(s.r) + ", tau* <= " + s.tau_star.str() + ", factor " + std::to_string(s.u.rows) +
           "x" + std::to_string(s.u.cols);
}

}  // namespace rankcert::cert
