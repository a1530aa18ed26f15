// llama2.c checkpoints (the "version 0" format of Karpathy's llama2.c, used by
// stories260K and many small trained models): reader, tokenizer, forward pass.
//
// UNTRUSTED producer code: it computes attention inputs (post-RoPE queries
// and keys) in float32, exactly as llama2.c's run.c does.  The instances it
// writes are exact statements about those float32 numbers; the checker never
// runs this code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rankcert::producer {

struct Llama2Config {
    int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
    bool shared_classifier = true;
    float norm_eps = 1e-5f;      // RMSNorm epsilon (llama2.c: 1e-5)
    float rope_theta = 10000.0f;  // rotary base (llama2.c: 10000)
    bool qkv_bias = false;        // q/k/v biases (qwen2), stored after everything else
    // Floats in the llama2.c weight layout (including the legacy RoPE tables).
    std::uint64_t weight_count() const;
    // Sizes positive and at most 2^20, heads divide dim, head size even.
    void validate(const std::string& where) const;
    int head_size() const { return dim / n_heads; }
    int kv_dim() const { return dim * n_kv_heads / n_heads; }
};

class Llama2Model {
public:
    // Throws InputError (one line naming the file and what is wrong).
    explicit Llama2Model(const std::string& path);
    // From weights already in the llama2.c layout (e.g. converted from a
    // HuggingFace checkpoint; see hf.hpp).  where names them in errors.
    Llama2Model(const Llama2Config& c, std::vector<float> weights, const std::string& where);
    const Llama2Config& config() const { return c_; }

    // Run the model over tokens (teacher forcing).  Returns the logits of the
    // last position.  When record is set, keeps every layer's post-RoPE q
    // (T x dim) and k (T x kv_dim).
    std::vector<float> forward(const std::vector<int>& tokens, bool record);
    // q_[layer][t * dim + h * head_size + i], k_[layer][t * kv_dim + g * head_size + i]
    const std::vector<std::vector<float>>& recorded_q() const { return q_; }
    const std::vector<std::vector<float>>& recorded_k() const { return k_; }

    // Greedy continuation: arg-max tokens after the prompt, steps of them.
    std::vector<int> greedy(const std::vector<int>& prompt, int steps);
    // Sampled continuation: each next token drawn from softmax(logits / temperature)
    // with a SplitMix64 stream from seed, so a (prompt, seed, temperature) gives the
    // same text on every platform.  For held-out benchmark texts that are not in
    // the repository (bench/fresh_bench.py).
    std::vector<int> sample(const std::vector<int>& prompt, int steps, std::uint64_t seed, double temperature);

private:
    void setup(const std::string& path);
    void step(int token, int pos, bool record);
    Llama2Config c_;
    std::vector<float> data_;  // every weight, as in the file
    const float *emb_, *rms_att_, *wq_, *wk_, *wv_, *wo_, *rms_ffn_, *w1_, *w2_, *w3_, *rms_final_, *wcls_;
    const float *bq_ = nullptr, *bk_ = nullptr, *bv_ = nullptr;
    // run state
    std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_cur_, att_, logits_, key_cache_, value_cache_;
    std::vector<std::vector<float>> q_, k_;
};

class Llama2Tokenizer {
public:
    Llama2Tokenizer(const std::string& path, int vocab_size);
    // BOS, a leading " " piece, one piece per UTF-8 character (byte fallback
    // id = byte + 3), then greedy merges by score (llama2.c's encode).
    std::vector<int> encode(const std::string& text, bool bos = true) const;
    // The text of a token following prev (llama2.c's decode).
    std::string decode(int prev, int token) const;
    const std::string& piece(int id) const { return vocab_.at(static_cast<std::size_t>(id)); }

private:
    int lookup(const std::string& s) const;
    std::vector<std::string> vocab_;
    std::vector<float> scores_;
    std::vector<std::pair<std::string, int>> sorted_;
};

}  // namespace rankcert::producer
