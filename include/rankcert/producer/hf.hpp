// HuggingFace-layout checkpoints: a folder with config.json and
// model.safetensors (or model.safetensors.index.json and its shards).
//
// UNTRUSTED producer code, like llama2.hpp: it computes post-RoPE queries and
// keys in float32; the instances written from them are exact statements about
// those float32 numbers.
//
// Two families:
//   * llama ("model_type": "llama"): weights converted to the llama2.c layout,
//     undoing the row permutation HuggingFace's converter applies to q_proj
//     and k_proj (rotate_half RoPE on split halves -> llama2.c's RoPE on
//     adjacent pairs), so the same forward pass runs and a converted llama2.c
//     checkpoint gives the same bits;
//   * gpt2 ("model_type": "gpt2"): fused, transposed c_attn (Conv1D), learned
//     positions, LayerNorm, tanh-GELU; queries and keys are the c_attn outputs;
//   * mistral: the llama path (no biases); its sliding window must cover the
//     tokens (extract checks);
//   * bert and vit (EncoderModel): bidirectional encoders, queries and keys
//     the outputs of the query/key Linear layers (bias included).  bert:
//     word + position + token-type-0 embeddings, LayerNorm, post-LN blocks;
//     vit: patch convolution, CLS token, position embeddings, pre-LN blocks.
#pragma once

#include "rankcert/producer/llama2.hpp"
#include "rankcert/producer/tensor.hpp"

#include <memory>
#include <string>
#include <vector>

namespace rankcert::producer {

// The model_type of a HuggingFace folder ("llama", "gpt2", ...).
std::string hf_model_type(const std::string& dir);

// The config's sliding_window (mistral): 0 when absent or null.
std::int64_t hf_sliding_window(const std::string& dir);

// A llama-family HuggingFace folder as a llama2.c model.
Llama2Model load_hf_llama(const std::string& dir);

class Gpt2Model {
public:
    explicit Gpt2Model(const std::string& dir);
    int n_layers() const { return n_layer_; }
    int n_heads() const { return n_head_; }
    int head_size() const { return n_embd_ / n_head_; }
    int max_tokens() const { return n_positions_; }
    int vocab_size() const { return vocab_; }
    // Runs the model over tokens, recording every layer's q and k
    // (T x n_embd each, head h in columns h*head_size ...).  Returns the
    // logits of the last position.
    std::vector<float> forward(const std::vector<int>& tokens);
    const std::vector<std::vector<float>>& recorded_q() const { return q_; }
    const std::vector<std::vector<float>>& recorded_k() const { return k_; }

private:
    struct Layer {
        std::vector<float> ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
    };
    int n_layer_ = 0, n_head_ = 0, n_embd_ = 0, n_positions_ = 0, vocab_ = 0, inner_ = 0;
    float ln_eps_ = 1e-5f;
    std::vector<float> wte_, wpe_, lnf_w_, lnf_b_;
    std::vector<Layer> layers_;
    std::vector<std::vector<float>> q_, k_;
};

// A bidirectional encoder of the bert or vit family (BertModel/BertFor*,
// ViTModel/ViTForImageClassification layouts, with or without the "bert." /
// "vit." prefix).  Forward passes in float32 record every layer's q and k.
class EncoderModel {
public:
    explicit EncoderModel(const std::string& dir);
    const std::string& family() const { return family_; }
    int n_layers() const { return n_layer_; }
    int n_heads() const { return n_head_; }
    int head_size() const { return E_ / n_head_; }
    // bert: over token ids (token type 0, no padding).
    void forward_tokens(const std::vector<int>& tokens);
    // vit: over a normalised image, float32 C x H x W in C order; H and W
    // must equal the config's image_size.  `where` names the input in errors.
    void forward_pixels(const NdTensor& pixels, const std::string& where);
    std::size_t tokens() const { return T_; }
    const std::vector<std::vector<float>>& recorded_q() const { return q_; }
    const std::vector<std::vector<float>>& recorded_k() const { return k_; }

private:
    struct Layer {
        std::vector<float> wq, bq, wk, bk, wv, bv, wo, bo, ln1_w, ln1_b, w1, b1, w2, b2, ln2_w, ln2_b;
    };
    void run(std::vector<float> x);
    std::string family_, act_;
    int n_layer_ = 0, n_head_ = 0, E_ = 0, inner_ = 0, positions_ = 0, vocab_ = 0;
    int image_ = 0, patch_ = 0, channels_ = 0;
    float ln_eps_ = 1e-12f;
    std::size_t T_ = 0;
    std::vector<float> word_, pos_, type0_, emb_ln_w_, emb_ln_b_, cls_, patch_w_, patch_b_;
    std::vector<Layer> layers_;
    std::vector<std::vector<float>> q_, k_;
};

}  // namespace rankcert::producer
