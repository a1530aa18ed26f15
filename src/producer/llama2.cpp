// llama2.c checkpoint reader, tokenizer and float32 forward pass (UNTRUSTED).
//
// Follows run.c of llama2.c: RMSNorm (eps 1e-5), rotary embeddings on
// adjacent pairs with frequency 10000^(-2i/head_size), grouped-query
// attention (query head h reads key head h / (n_heads / n_kv_heads)), SwiGLU
// FFN, a classifier shared with the token embeddings (positive vocab_size).
#include "rankcert/producer/llama2.hpp"

#include "rankcert/input.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

namespace rankcert::producer {

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open file");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void rmsnorm(float* o, const float* x, const float* w, int n, float eps) {
    float ss = 0;
    for (int j = 0; j < n; ++j) ss += x[j] * x[j];
    ss /= static_cast<float>(n);
    ss += eps;
    ss = 1.0f / std::sqrt(ss);
    for (int j = 0; j < n; ++j) o[j] = w[j] * (ss * x[j]);
}

void matmul(float* xout, const float* x, const float* w, int n, int d) {
    // W (d, n) @ x (n) -> xout (d)
    for (int i = 0; i < d; ++i) {
        float val = 0;
        for (int j = 0; j < n; ++j) val += w[static_cast<std::size_t>(i) * n + j] * x[j];
        xout[i] = val;
    }
}

void softmax(float* x, int size) {
    float mx = x[0];
    for (int i = 1; i < size; ++i) mx = std::max(mx, x[i]);
    float sum = 0;
    for (int i = 0; i < size; ++i) {
        x[i] = std::exp(x[i] - mx);
        sum += x[i];
    }
    for (int i = 0; i < size; ++i) x[i] /= sum;
}

}  // namespace

Llama2Model::Llama2Model(const std::string& path) {
    const std::string bytes = read_all(path);
    if (bytes.size() < 28) throw InputError(path + ": header: truncated checkpoint (" + std::to_string(bytes.size()) + " bytes)");
    std::int32_t h[7];
    std::memcpy(h, bytes.data(), 28);
    c_.dim = h[0];
    c_.hidden_dim = h[1];
    c_.n_layers = h[2];
    c_.n_heads = h[3];
    c_.n_kv_heads = h[4];
    c_.vocab_size = h[5];
    c_.seq_len = h[6];
    c_.shared_classifier = c_.vocab_size > 0;
    if (c_.vocab_size < 0) c_.vocab_size = -c_.vocab_size;
    c_.validate(path);
    const std::uint64_t floats = c_.weight_count();
    if (bytes.size() != 28 + 4 * floats)
        throw InputError(path + ": weights: file has " + std::to_string(bytes.size()) + " bytes, the header implies " +
                         std::to_string(28 + 4 * floats) + " (truncated or inconsistent checkpoint)");
    data_.resize(floats);
    std::memcpy(data_.data(), bytes.data() + 28, 4 * floats);
    setup(path);
}

Llama2Model::Llama2Model(const Llama2Config& c, std::vector<float> weights, const std::string& where)
    : c_(c), data_(std::move(weights)) {
    c_.validate(where);
    if (data_.size() != c_.weight_count())
        throw InputError(where + ": weights: " + std::to_string(data_.size()) + " floats, the config implies " +
                         std::to_string(c_.weight_count()));
    setup(where);
}

void Llama2Config::validate(const std::string& where) const {
    const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    const int vals[] = {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len};
    for (int i = 0; i < 7; ++i)
        if (vals[i] <= 0 || vals[i] > (1 << 20))
            throw InputError(where + ": header." + names[i] + ": " + std::to_string(vals[i]) + " is not a sensible size");
    if (dim % n_heads) throw InputError(where + ": header.n_heads: does not divide dim");
    if (n_heads % n_kv_heads) throw InputError(where + ": header.n_kv_heads: does not divide n_heads");
    if (head_size() % 2) throw InputError(where + ": header: head size must be even for rotary embeddings");
}

std::uint64_t Llama2Config::weight_count() const {
    const std::uint64_t d = static_cast<std::uint64_t>(dim), hid = static_cast<std::uint64_t>(hidden_dim),
                        L = static_cast<std::uint64_t>(n_layers), V = static_cast<std::uint64_t>(vocab_size),
                        kv = static_cast<std::uint64_t>(kv_dim()), S = static_cast<std::uint64_t>(seq_len),
                        hs = static_cast<std::uint64_t>(head_size());
    return V * d + L * d + L * d * d + 2 * L * kv * d + L * d * d + L * d + 3 * L * hid * d + d + S * hs +
           (shared_classifier ? 0 : V * d) + (qkv_bias ? L * (d + 2 * kv) : 0);
}

void Llama2Model::setup(const std::string& path) {
    const std::uint64_t dim = static_cast<std::uint64_t>(c_.dim), hid = static_cast<std::uint64_t>(c_.hidden_dim),
                        L = static_cast<std::uint64_t>(c_.n_layers), V = static_cast<std::uint64_t>(c_.vocab_size),
                        kv = static_cast<std::uint64_t>(c_.kv_dim()), S = static_cast<std::uint64_t>(c_.seq_len),
                        hs = static_cast<std::uint64_t>(c_.head_size());
    for (float f : data_)
        if (!std::isfinite(f)) throw InputError(path + ": weights: non-finite value");
    const float* p = data_.data();
    emb_ = p; p += V * dim;
    rms_att_ = p; p += L * dim;
    wq_ = p; p += L * dim * dim;
    wk_ = p; p += L * kv * dim;
    wv_ = p; p += L * kv * dim;
    wo_ = p; p += L * dim * dim;
    rms_ffn_ = p; p += L * dim;
    w1_ = p; p += L * hid * dim;
    w2_ = p; p += L * dim * hid;
    w3_ = p; p += L * hid * dim;
    rms_final_ = p; p += dim;
    p += S * hs;  // legacy RoPE tables, unused
    wcls_ = c_.shared_classifier ? emb_ : p;
    if (!c_.shared_classifier) p += V * dim;
    if (c_.qkv_bias) {
        bq_ = p; p += L * dim;
        bk_ = p; p += L * kv;
        bv_ = p; p += L * kv;
    }
    x_.resize(dim);
    xb_.resize(dim);
    xb2_.resize(dim);
    hb_.resize(hid);
    hb2_.resize(hid);
    q_cur_.resize(dim);
    att_.resize(static_cast<std::size_t>(c_.n_heads) * S);
    logits_.resize(V);
    key_cache_.resize(L * S * kv);
    value_cache_.resize(L * S * kv);
}

void Llama2Model::step(int token, int pos, bool record) {
    const int dim = c_.dim, kv_dim = c_.kv_dim(), hs = c_.head_size(), hid = c_.hidden_dim;
    const int kv_mul = c_.n_heads / c_.n_kv_heads;
    const std::size_t S = static_cast<std::size_t>(c_.seq_len);
    std::memcpy(x_.data(), emb_ + static_cast<std::size_t>(token) * dim, sizeof(float) * dim);
    for (int l = 0; l < c_.n_layers; ++l) {
        const std::size_t lo = static_cast<std::size_t>(l);
        rmsnorm(xb_.data(), x_.data(), rms_att_ + lo * dim, dim, c_.norm_eps);
        float* kc = key_cache_.data() + lo * S * kv_dim + static_cast<std::size_t>(pos) * kv_dim;
        float* vc = value_cache_.data() + lo * S * kv_dim + static_cast<std::size_t>(pos) * kv_dim;
        matmul(q_cur_.data(), xb_.data(), wq_ + lo * dim * dim, dim, dim);
        matmul(kc, xb_.data(), wk_ + lo * kv_dim * dim, dim, kv_dim);
        matmul(vc, xb_.data(), wv_ + lo * kv_dim * dim, dim, kv_dim);
        if (bq_) {
            for (int i = 0; i < dim; ++i) q_cur_[static_cast<std::size_t>(i)] += bq_[lo * dim + static_cast<std::size_t>(i)];
            for (int i = 0; i < kv_dim; ++i) {
                kc[i] += bk_[lo * kv_dim + static_cast<std::size_t>(i)];
                vc[i] += bv_[lo * kv_dim + static_cast<std::size_t>(i)];
            }
        }
        for (int i = 0; i < dim; i += 2) {
            const int head_dim = i % hs;
            const float freq = 1.0f / std::pow(c_.rope_theta, static_cast<float>(head_dim) / static_cast<float>(hs));
            const float val = static_cast<float>(pos) * freq;
            const float fcr = std::cos(val), fci = std::sin(val);
            const int rotn = i < kv_dim ? 2 : 1;
            for (int v = 0; v < rotn; ++v) {
                float* vec = v == 0 ? q_cur_.data() : kc;
                const float v0 = vec[i], v1 = vec[i + 1];
                vec[i] = v0 * fcr - v1 * fci;
                vec[i + 1] = v0 * fci + v1 * fcr;
            }
        }
        if (record) {
            q_[lo].insert(q_[lo].end(), q_cur_.begin(), q_cur_.end());
            k_[lo].insert(k_[lo].end(), kc, kc + kv_dim);
        }
        for (int h = 0; h < c_.n_heads; ++h) {
            const float* q = q_cur_.data() + h * hs;
            float* att = att_.data() + static_cast<std::size_t>(h) * S;
            for (int t = 0; t <= pos; ++t) {
                const float* k = key_cache_.data() + lo * S * kv_dim + static_cast<std::size_t>(t) * kv_dim + (h / kv_mul) * hs;
                float score = 0;
                for (int i = 0; i < hs; ++i) score += q[i] * k[i];
                att[t] = score / std::sqrt(static_cast<float>(hs));
            }
            softmax(att, pos + 1);
            float* xb = xb_.data() + h * hs;
            std::fill(xb, xb + hs, 0.0f);
            for (int t = 0; t <= pos; ++t) {
                const float* v = value_cache_.data() + lo * S * kv_dim + static_cast<std::size_t>(t) * kv_dim + (h / kv_mul) * hs;
                for (int i = 0; i < hs; ++i) xb[i] += att[t] * v[i];
            }
        }
        matmul(xb2_.data(), xb_.data(), wo_ + lo * dim * dim, dim, dim);
        for (int i = 0; i < dim; ++i) x_[i] += xb2_[i];
        rmsnorm(xb_.data(), x_.data(), rms_ffn_ + lo * dim, dim, c_.norm_eps);
        matmul(hb_.data(), xb_.data(), w1_ + lo * hid * dim, dim, hid);
        matmul(hb2_.data(), xb_.data(), w3_ + lo * hid * dim, dim, hid);
        for (int i = 0; i < hid; ++i) {
            float v = hb_[i];
            v *= 1.0f / (1.0f + std::exp(-v));
            hb_[i] = v * hb2_[i];
        }
        matmul(xb_.data(), hb_.data(), w2_ + lo * dim * hid, hid, dim);
        for (int i = 0; i < dim; ++i) x_[i] += xb_[i];
    }
    rmsnorm(x_.data(), x_.data(), rms_final_, dim, c_.norm_eps);
    matmul(logits_.data(), x_.data(), wcls_, dim, c_.vocab_size);
}

std::vector<float> Llama2Model::forward(const std::vector<int>& tokens, bool record) {
    if (tokens.empty()) throw InputError("forward: no tokens");
    if (tokens.size() > static_cast<std::size_t>(c_.seq_len))
        throw InputError("text: " + std::to_string(tokens.size()) + " tokens exceed the model's seq_len " +
                         std::to_string(c_.seq_len));
    if (record) {
        q_.assign(static_cast<std::size_t>(c_.n_layers), {});
        k_.assign(static_cast<std::size_t>(c_.n_layers), {});
    }
    for (std::size_t pos = 0; pos < tokens.size(); ++pos) {
        if (tokens[pos] < 0 || tokens[pos] >= c_.vocab_size) throw InputError("tokens: id " + std::to_string(tokens[pos]) + " at position " + std::to_string(pos) +
                             " is outside the vocabulary [0, " + std::to_string(c_.vocab_size) + ")");
        step(tokens[pos], static_cast<int>(pos), record);
    }
    return logits_;
}

std::vector<int> Llama2Model::greedy(const std::vector<int>& prompt, int steps) {
    std::vector<int> out = prompt;
    forward(prompt, false);
    for (int s = 0; s < steps && static_cast<int>(out.size()) < c_.seq_len; ++s) {
        const int next = static_cast<int>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
        out.push_back(next);
        step(next, static_cast<int>(out.size()) - 1, false);
    }
    return out;
}

std::vector<int> Llama2Model::sample(const std::vector<int>& prompt, int steps, std::uint64_t seed, double temperature) {
    if (!(temperature > 0) || !std::isfinite(temperature)) throw InputError("--temperature: must be a positive number");
    std::uint64_t state = seed;
    auto uniform = [&state] {  // SplitMix64, 53 bits to [0, 1)
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        return static_cast<double>(z >> 11) * 0x1.0p-53;
    };
    std::vector<int> out = prompt;
    forward(prompt, false);
    std::vector<double> p(logits_.size());
    for (int s = 0; s < steps && static_cast<int>(out.size()) < c_.seq_len; ++s) {
        const double top = *std::max_element(logits_.begin(), logits_.end());
        double z = 0;
        for (std::size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp((logits_[i] - top) / temperature);
        double u = uniform() * z;
        int next = static_cast<int>(p.size()) - 1;
        for (std::size_t i = 0; i < p.size(); ++i)
            if ((u -= p[i]) < 0) {
                next = static_cast<int>(i);
                break;
            }
        out.push_back(next);
        step(next, static_cast<int>(out.size()) - 1, false);
    }
    return out;
}

Llama2Tokenizer::Llama2Tokenizer(const std::string& path, int vocab_size) {
    const std::string b = read_all(path);
    std::size_t off = 0;
    auto need = [&](std::size_t n, const std::string& what) {
        if (off + n > b.size()) throw InputError(path + ": " + what + ": truncated tokenizer");
    };
    need(4, "max_token_length");
    std::int32_t max_len;
    std::memcpy(&max_len, b.data(), 4);
    off = 4;
    if (max_len <= 0 || max_len > 4096) throw InputError(path + ": max_token_length: " + std::to_string(max_len) + " is not sensible");
    for (int i = 0; i < vocab_size; ++i) {
        const std::string where = "token " + std::to_string(i);
        need(8, where);
        float score;
        std::int32_t len;
        std::memcpy(&score, b.data() + off, 4);
        std::memcpy(&len, b.data() + off + 4, 4);
        off += 8;
        if (len < 0 || len > max_len) throw InputError(path + ": " + where + ": length " + std::to_string(len) + " out of range");
        need(static_cast<std::size_t>(len), where);
        vocab_.push_back(b.substr(off, static_cast<std::size_t>(len)));
        scores_.push_back(score);
        off += static_cast<std::size_t>(len);
    }
    if (off != b.size())
        throw InputError(path + ": " + std::to_string(b.size() - off) + " trailing bytes (vocab size does not match the model?)");
    for (int i = 0; i < vocab_size; ++i) sorted_.emplace_back(vocab_[static_cast<std::size_t>(i)], i);
    std::sort(sorted_.begin(), sorted_.end());
}

int Llama2Tokenizer::lookup(const std::string& s) const {
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(s, -1));
    return it != sorted_.end() && it->first == s ? it->second : -1;
}

std::vector<int> Llama2Tokenizer::encode(const std::string& text, bool bos) const {
    std::vector<int> tokens;
    if (bos) tokens.push_back(1);
    if (!text.empty()) tokens.push_back(lookup(" "));
    for (std::size_t i = 0; i < text.size();) {
        std::size_t len = 1;
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0xf0) len = 4;
        else if (c >= 0xe0) len = 3;
        else if (c >= 0xc0) len = 2;
        len = std::min(len, text.size() - i);
        const std::string ch = text.substr(i, len);
        const int id = lookup(ch);
        if (id >= 0) tokens.push_back(id);
        else
            for (unsigned char byte : ch) tokens.push_back(byte + 3);
        i += len;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        std::size_t best_idx = 0;
        for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
            if (tokens[i] < 0 || tokens[i + 1] < 0) continue;
            const int id = lookup(vocab_[static_cast<std::size_t>(tokens[i])] + vocab_[static_cast<std::size_t>(tokens[i + 1])]);
            if (id >= 0 && scores_[static_cast<std::size_t>(id)] > best) {
                best = scores_[static_cast<std::size_t>(id)];
                best_id = id;
                best_idx = i;
            }
        }
        if (best_id < 0) break;
        tokens[best_idx] = best_id;
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_idx) + 1);
    }
    return tokens;
}

std::string Llama2Tokenizer::decode(int prev, int token) const {
    std::string p = piece(token);
    if (prev == 1 && !p.empty() && p[0] == ' ') p = p.substr(1);
    unsigned byte;
    if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%02X>", &byte) == 1) p = std::string(1, static_cast<char>(byte));
    return p;
}

}  // namespace rankcert::producer
