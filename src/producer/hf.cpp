// HuggingFace-layout checkpoints (UNTRUSTED); see hf.hpp.
#include "rankcert/producer/hf.hpp"
#include "rankcert/paths.hpp"

#include "rankcert/input.hpp"
#include "rankcert/producer/tensor.hpp"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace rankcert::producer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_config(const std::string& dir) {
    const fs::path p = fs::path(dir) / "config.json";
    if (!path_exists(p)) throw InputError(dir + ": no config.json (a HuggingFace model folder has config.json and model.safetensors)");
    try {
        json j = json::parse(read_file_bytes(p.string()));
        if (!j.is_object()) throw InputError(p.string() + ": not a JSON object");
        return j;
    } catch (const json::exception&) {
        throw InputError(p.string() + ": not valid JSON");
    }
}

// A config field: present and an integer in [1, 2^20], else the default (if any).
int config_int(const json& c, const std::string& dir, const std::string& key, int fallback = -1) {
    if (!c.contains(key) || c[key].is_null()) {
        if (fallback >= 0) return fallback;
        throw InputError(dir + "/config.json: " + key + ": missing");
    }
    if (!c[key].is_number_integer() || c[key].get<long long>() < 1 || c[key].get<long long>() > (1 << 20))
        throw InputError(dir + "/config.json: " + key + ": not an integer in [1, 2^20]");
    return c[key].get<int>();
}

float config_float(const json& c, const std::string& dir, const std::string& key, float fallback) {
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_number() || !(c[key].get<double>() > 0) || !std::isfinite(c[key].get<double>()))
        throw InputError(dir + "/config.json: " + key + ": not a positive number");
    return static_cast<float>(c[key].get<double>());
}

std::string config_string(const json& c, const std::string& dir, const std::string& key, const std::string& fallback) {
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_string()) throw InputError(dir + "/config.json: " + key + ": not a string");
    return c[key].get<std::string>();
}

bool config_bool(const json& c, const std::string& dir, const std::string& key, bool fallback) {
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_boolean()) throw InputError(dir + "/config.json: " + key + ": not true or false");
    return c[key].get<bool>();
}

// The tensors of a folder: model.safetensors, or the shards an index names.
class WeightStore {
public:
    explicit WeightStore(const std::string& dir) : dir_(dir) {
        const fs::path index = fs::path(dir) / "model.safetensors.index.json";
        if (path_exists(index)) {
            json j;
            try {
                j = json::parse(read_file_bytes(index.string()));
            } catch (const json::exception&) {
                throw InputError(index.string() + ": not valid JSON");
            }
            if (!j.contains("weight_map") || !j["weight_map"].is_object())
                throw InputError(index.string() + ": weight_map: missing or not an object");
            for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
                if (!it.value().is_string()) throw InputError(index.string() + ": weight_map." + it.key() + ": not a file name");
                const std::string f = it.value().get<std::string>();
                if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
                    throw InputError(index.string() + ": weight_map." + it.key() + ": shard must be a file in the folder");
                where_[it.key()] = f;
            }
        } else {
            const fs::path single = fs::path(dir) / "model.safetensors";
            if (!path_exists(single)) throw InputError(dir + ": no model.safetensors (nor model.safetensors.index.json)");
            for (const auto& [n, e] : this->index("model.safetensors").entries) where_[n] = "model.safetensors";
        }
    }
    // Entries of all tensors the folder holds (for checking a config's sizes
    // against the weights before anything is allocated).
    std::uint64_t stored_elements() {
        std::uint64_t total = 0;
        for (const auto& [name, f] : where_) {
            const auto& ix = index(f);
            auto it = ix.entries.find(name);
            if (it == ix.entries.end()) continue;
            std::uint64_t n = 1;
            for (auto d : it->second.shape) n *= d;
            total += n;
        }
        return total;
    }
    bool has(const std::string& name) const { return where_.count(name) > 0; }
    // The tensor as float32, with its shape checked.
    std::vector<float> get(const std::string& name, const std::vector<std::uint64_t>& shape) {
        auto it = where_.find(name);
        if (it == where_.end()) throw InputError(dir_ + ": no tensor \"" + name + "\" in the checkpoint");
        const NdTensor t = safetensors_tensor(file(it->second), index(it->second), name, dir_ + "/" + it->second);
        if (t.shape != shape) {
            std::string want, have;
            for (auto s : shape) want.append(want.empty() ? "" : ", ").append(std::to_string(s));
            for (auto s : t.shape) have.append(have.empty() ? "" : ", ").append(std::to_string(s));
            throw InputError(t.where + ": shape [" + have + "], the config implies [" + want + "]");
        }
        return to_float32(t);
    }

private:
    const std::string& file(const std::string& f) {
        auto& b = files_[f];
        if (b.empty()) b = read_file_bytes(confined(dir_, f, Where{dir_, f}, "the model folder").string());
        return b;
    }
    // Each file's header is parsed and checked once.
    const SafetensorsIndex& index(const std::string& f) {
        auto it = indexes_.find(f);
        if (it == indexes_.end()) it = indexes_.emplace(f, safetensors_index(file(f), dir_ + "/" + f)).first;
        return it->second;
    }
    std::string dir_;
    std::map<std::string, std::string> where_, files_;
    std::map<std::string, SafetensorsIndex> indexes_;
};

void append(std::vector<float>& out, const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); }

using RowMatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// LayerNorm of every row (gpt2, bert, vit), in float32 as the models run it.
RowMatF layer_norm_rows(const RowMatF& in, const std::vector<float>& g, const std::vector<float>& b, float eps) {
    using MapV = Eigen::Map<const Eigen::RowVectorXf>;
    const Eigen::Index E = in.cols();
    RowMatF out(in.rows(), E);
    for (Eigen::Index t = 0; t < in.rows(); ++t) {
        const float mean = in.row(t).sum() / static_cast<float>(E);
        const Eigen::RowVectorXf cen = in.row(t).array() - mean;
        const float var = cen.squaredNorm() / static_cast<float>(E);
        out.row(t) = (cen / std::sqrt(var + eps)).cwiseProduct(MapV(g.data(), E)) + MapV(b.data(), E);
    }
    return out;
}

// GELU in its tanh form (gpt2's gelu_new, gelu_pytorch_tanh).
float gelu_tanh(float z) {
    const float c0 = std::sqrt(2.0f / static_cast<float>(M_PI));
    return 0.5f * z * (1.0f + std::tanh(c0 * (z + 0.044715f * z * z * z)));
}

// HuggingFace's converter permutes the rows of each head of q_proj/k_proj so
// that rotate_half (first half, second half) acts as the original RoPE on
// adjacent pairs: hf row h*hs + j*hs/2 + i holds original row h*hs + 2i + j.
// This puts them back.
std::vector<float> unpermute_rows(const std::vector<float>& w, int heads, int hs, int cols) {
    std::vector<float> out(w.size());
    const std::size_t c = static_cast<std::size_t>(cols);
    for (int h = 0; h < heads; ++h)
        for (int j = 0; j < 2; ++j)
            for (int i = 0; i < hs / 2; ++i) {
                const std::size_t from = static_cast<std::size_t>(h * hs + j * (hs / 2) + i), to = static_cast<std::size_t>(h * hs + 2 * i + j);
                std::copy(w.begin() + static_cast<std::ptrdiff_t>(from * c), w.begin() + static_cast<std::ptrdiff_t>((from + 1) * c),
                          out.begin() + static_cast<std::ptrdiff_t>(to * c));
            }
    return out;
}

}  // namespace

std::string hf_model_type(const std::string& dir) {
    const json c = read_config(dir);
    if (!c.contains("model_type") || !c["model_type"].is_string()) throw InputError(dir + "/config.json: model_type: missing");
    return c["model_type"].get<std::string>();
}

std::int64_t hf_sliding_window(const std::string& dir) {
    const json c = read_config(dir);
    if (!c.contains("sliding_window") || c["sliding_window"].is_null()) return 0;
    // qwen2: off unless use_sliding_window (its default is false).
    if (!config_bool(c, dir, "use_sliding_window", !(c.contains("model_type") && c["model_type"] == "qwen2"))) return 0;
    return config_int(c, dir, "sliding_window");
}

Llama2Model load_hf_llama(const std::string& dir) {
    const json c = read_config(dir);
    const std::string cfg = dir + "/config.json";
    if (config_string(c, dir, "hidden_act", "silu") != "silu") throw InputError(cfg + ": hidden_act: only silu is supported");
    if (c.contains("rope_scaling") && !c["rope_scaling"].is_null()) throw InputError(cfg + ": rope_scaling: not supported");
    if (config_bool(c, dir, "attention_bias", false) || config_bool(c, dir, "mlp_bias", false)) throw InputError(cfg + ": attention_bias/mlp_bias: not supported");
    Llama2Config k;
    // qwen2: biases on q_proj, k_proj and v_proj (not o_proj), else llama.
    k.qkv_bias = c.contains("model_type") && c["model_type"] == "qwen2";
    k.dim = config_int(c, dir, "hidden_size");
    k.hidden_dim = config_int(c, dir, "intermediate_size");
    k.n_layers = config_int(c, dir, "num_hidden_layers");
    k.n_heads = config_int(c, dir, "num_attention_heads");
    k.n_kv_heads = config_int(c, dir, "num_key_value_heads", k.n_heads);
    k.vocab_size = config_int(c, dir, "vocab_size");
    k.seq_len = config_int(c, dir, "max_position_embeddings");
    k.norm_eps = config_float(c, dir, "rms_norm_eps", 1e-6f);
    k.rope_theta = config_float(c, dir, "rope_theta", 10000.0f);
    k.validate(cfg);
    if (c.contains("head_dim") && !c["head_dim"].is_null() && c["head_dim"] != k.head_size())
        throw InputError(cfg + ": head_dim: differs from hidden_size / num_attention_heads (not supported)");
    WeightStore w(dir);
    k.shared_classifier = !w.has("lm_head.weight");
    using U = std::uint64_t;
    const U dim = static_cast<U>(k.dim), hid = static_cast<U>(k.hidden_dim), kv = static_cast<U>(k.kv_dim()),
            V = static_cast<U>(k.vocab_size);
    // The config's sizes against the weights actually stored, before any
    // allocation (a config may claim sizes the files do not have).
    const std::uint64_t rope = static_cast<std::uint64_t>(k.seq_len) * static_cast<std::uint64_t>(k.head_size());
    if (rope > (std::uint64_t{1} << 27)) throw InputError(cfg + ": max_position_embeddings: too large (seq_len x head size above 2^27)");
    if (static_cast<std::uint64_t>(k.weight_count()) > w.stored_elements() + rope)
        throw InputError(cfg + ": the config implies " + std::to_string(k.weight_count() - rope) + " weights, the checkpoint holds " +
                         std::to_string(w.stored_elements()));
    std::vector<float> d;
    d.reserve(k.weight_count());
    auto layer = [](int l, const std::string& rest) { return "model.layers." + std::to_string(l) + "." + rest; };
    append(d, w.get("model.embed_tokens.weight", {V, dim}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "input_layernorm.weight"), {dim}));
    for (int l = 0; l < k.n_layers; ++l)
        append(d, unpermute_rows(w.get(layer(l, "self_attn.q_proj.weight"), {dim, dim}), k.n_heads, k.head_size(), k.dim));
    for (int l = 0; l < k.n_layers; ++l)
        append(d, unpermute_rows(w.get(layer(l, "self_attn.k_proj.weight"), {kv, dim}), k.n_kv_heads, k.head_size(), k.dim));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "self_attn.v_proj.weight"), {kv, dim}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "self_attn.o_proj.weight"), {dim, dim}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "post_attention_layernorm.weight"), {dim}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "mlp.gate_proj.weight"), {hid, dim}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "mlp.down_proj.weight"), {dim, hid}));
    for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "mlp.up_proj.weight"), {hid, dim}));
    append(d, w.get("model.norm.weight", {dim}));
    d.resize(d.size() + static_cast<std::size_t>(k.seq_len) * static_cast<std::size_t>(k.head_size()), 0.0f);  // legacy RoPE tables
    if (!k.shared_classifier) append(d, w.get("lm_head.weight", {V, dim}));
    if (k.qkv_bias) {  // permuted like their weights' rows
        for (int l = 0; l < k.n_layers; ++l) append(d, unpermute_rows(w.get(layer(l, "self_attn.q_proj.bias"), {dim}), k.n_heads, k.head_size(), 1));
        for (int l = 0; l < k.n_layers; ++l) append(d, unpermute_rows(w.get(layer(l, "self_attn.k_proj.bias"), {kv}), k.n_kv_heads, k.head_size(), 1));
        for (int l = 0; l < k.n_layers; ++l) append(d, w.get(layer(l, "self_attn.v_proj.bias"), {kv}));
    }
    return Llama2Model(k, std::move(d), dir);
}

Gpt2Model::Gpt2Model(const std::string& dir) {
    const json c = read_config(dir);
    const std::string cfg = dir + "/config.json";
    n_embd_ = config_int(c, dir, "n_embd");
    n_head_ = config_int(c, dir, "n_head");
    n_layer_ = config_int(c, dir, "n_layer");
    n_positions_ = config_int(c, dir, "n_positions", config_int(c, dir, "n_ctx", 1024));
    vocab_ = config_int(c, dir, "vocab_size");
    inner_ = config_int(c, dir, "n_inner", 4 * n_embd_);
    ln_eps_ = config_float(c, dir, "layer_norm_epsilon", 1e-5f);
    if (n_embd_ % n_head_) throw InputError(cfg + ": n_head: does not divide n_embd");
    const std::string act = config_string(c, dir, "activation_function", "gelu_new");
    if (act != "gelu_new") throw InputError(cfg + ": activation_function: only gelu_new is supported, found " + act.substr(0, 30));
    if (!config_bool(c, dir, "scale_attn_weights", true) || config_bool(c, dir, "scale_attn_by_inverse_layer_idx", false))
        throw InputError(cfg + ": scale_attn_weights/scale_attn_by_inverse_layer_idx: only the standard 1/sqrt(head size) scale is supported");
    WeightStore w(dir);
    {
        // The config's sizes against the stored weights, before any allocation.
        const std::uint64_t E = static_cast<std::uint64_t>(n_embd_), want = static_cast<std::uint64_t>(n_layer_) * (4 * E * E + 2 * E * static_cast<std::uint64_t>(inner_)) +
                                                                                (static_cast<std::uint64_t>(vocab_) + static_cast<std::uint64_t>(n_positions_)) * E;
        if (want > w.stored_elements())
            throw InputError(cfg + ": the config implies at least " + std::to_string(want) + " weights, the checkpoint holds " +
                             std::to_string(w.stored_elements()));
    }
    const std::string pre = w.has("wte.weight") ? "" : "transformer.";
    using U = std::uint64_t;
    const U E = static_cast<U>(n_embd_), I = static_cast<U>(inner_);
    wte_ = w.get(pre + "wte.weight", {static_cast<U>(vocab_), E});
    wpe_ = w.get(pre + "wpe.weight", {static_cast<U>(n_positions_), E});
    lnf_w_ = w.get(pre + "ln_f.weight", {E});
    lnf_b_ = w.get(pre + "ln_f.bias", {E});
    for (int l = 0; l < n_layer_; ++l) {
        const std::string h = pre + "h." + std::to_string(l) + ".";
        Layer L;
        L.ln1_w = w.get(h + "ln_1.weight", {E});
        L.ln1_b = w.get(h + "ln_1.bias", {E});
        L.attn_w = w.get(h + "attn.c_attn.weight", {E, 3 * E});
        L.attn_b = w.get(h + "attn.c_attn.bias", {3 * E});
        L.proj_w = w.get(h + "attn.c_proj.weight", {E, E});
        L.proj_b = w.get(h + "attn.c_proj.bias", {E});
        L.ln2_w = w.get(h + "ln_2.weight", {E});
        L.ln2_b = w.get(h + "ln_2.bias", {E});
        L.fc_w = w.get(h + "mlp.c_fc.weight", {E, I});
        L.fc_b = w.get(h + "mlp.c_fc.bias", {I});
        L.fc2_w = w.get(h + "mlp.c_proj.weight", {I, E});
        L.fc2_b = w.get(h + "mlp.c_proj.bias", {E});
        layers_.push_back(std::move(L));
    }
}

std::vector<float> Gpt2Model::forward(const std::vector<int>& tokens) {
    using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using MapM = Eigen::Map<const MatF>;
    using MapV = Eigen::Map<const Eigen::RowVectorXf>;
    const Eigen::Index T = static_cast<Eigen::Index>(tokens.size()), E = n_embd_, hs = head_size();
    if (tokens.empty()) throw InputError("gpt2: no tokens");
    if (T > n_positions_)
        throw InputError("tokens: " + std::to_string(T) + " exceed the model's n_positions " + std::to_string(n_positions_));
    MatF x(T, E);
    for (Eigen::Index t = 0; t < T; ++t) {
        const int id = tokens[static_cast<std::size_t>(t)];
        if (id < 0 || id >= vocab_) throw InputError("tokens: id " + std::to_string(id) + " is outside the vocabulary");
        x.row(t) = MapV(&wte_[static_cast<std::size_t>(id) * static_cast<std::size_t>(E)], E) + MapV(&wpe_[static_cast<std::size_t>(t * E)], E);
    }
    auto layer_norm = [&](const MatF& in, const std::vector<float>& g, const std::vector<float>& b) {
        return layer_norm_rows(in, g, b, ln_eps_);
    };
    q_.assign(static_cast<std::size_t>(n_layer_), {});
    k_.assign(static_cast<std::size_t>(n_layer_), {});
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (int l = 0; l < n_layer_; ++l) {
        const Layer& L = layers_[static_cast<std::size_t>(l)];
        const MatF h = layer_norm(x, L.ln1_w, L.ln1_b);
        MatF qkv = h * MapM(L.attn_w.data(), E, 3 * E);
        qkv.rowwise() += MapV(L.attn_b.data(), 3 * E);
        const MatF q = qkv.leftCols(E), k = qkv.middleCols(E, E), v = qkv.rightCols(E);
        q_[static_cast<std::size_t>(l)].assign(q.data(), q.data() + q.size());
        k_[static_cast<std::size_t>(l)].assign(k.data(), k.data() + k.size());
        MatF att_out(T, E);
        for (Eigen::Index hd = 0; hd < n_head_; ++hd) {
            MatF s = (q.middleCols(hd * hs, hs) * k.middleCols(hd * hs, hs).transpose()) * scale;
            for (Eigen::Index i = 0; i < T; ++i) {
                const float mx = s.row(i).head(i + 1).maxCoeff();
                for (Eigen::Index j = 0; j < T; ++j) s(i, j) = j <= i ? std::exp(s(i, j) - mx) : 0.0f;
                s.row(i) /= s.row(i).sum();
            }
            att_out.middleCols(hd * hs, hs) = s * v.middleCols(hd * hs, hs);
        }
        MatF proj = att_out * MapM(L.proj_w.data(), E, E);
        proj.rowwise() += MapV(L.proj_b.data(), E);
        x += proj;
        const MatF h2 = layer_norm(x, L.ln2_w, L.ln2_b);
        MatF f = h2 * MapM(L.fc_w.data(), E, inner_);
        f.rowwise() += MapV(L.fc_b.data(), inner_);
        f = f.unaryExpr(&gelu_tanh);
        MatF m = f * MapM(L.fc2_w.data(), inner_, E);
        m.rowwise() += MapV(L.fc2_b.data(), E);
        x += m;
    }
    const MatF last = layer_norm(x.bottomRows(1), lnf_w_, lnf_b_);
    const Eigen::RowVectorXf logits = last * MapM(wte_.data(), vocab_, E).transpose();
    return std::vector<float>(logits.data(), logits.data() + logits.size());
}

EncoderModel::EncoderModel(const std::string& dir) {
    const json c = read_config(dir);
    const std::string cfg = dir + "/config.json";
    family_ = c.contains("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "";
    if (family_ != "bert" && family_ != "vit") throw InputError(cfg + ": model_type: not bert or vit");
    E_ = config_int(c, dir, "hidden_size");
    n_layer_ = config_int(c, dir, "num_hidden_layers");
    n_head_ = config_int(c, dir, "num_attention_heads");
    inner_ = config_int(c, dir, "intermediate_size");
    ln_eps_ = config_float(c, dir, "layer_norm_eps", 1e-12f);
    if (E_ % n_head_) throw InputError(cfg + ": num_attention_heads: does not divide hidden_size");
    act_ = config_string(c, dir, "hidden_act", "gelu");
    if (act_ != "gelu" && act_ != "gelu_new" && act_ != "gelu_pytorch_tanh")
        throw InputError(cfg + ": hidden_act: only gelu, gelu_new and gelu_pytorch_tanh are supported, found " + act_.substr(0, 30));
    using U = std::uint64_t;
    const U E = static_cast<U>(E_), I = static_cast<U>(inner_);
    bool qkv_bias = true;
    if (family_ == "bert") {
        if (config_string(c, dir, "position_embedding_type", "absolute") != "absolute")
            throw InputError(cfg + ": position_embedding_type: only absolute is supported");
        positions_ = config_int(c, dir, "max_position_embeddings");
        vocab_ = config_int(c, dir, "vocab_size");
        config_int(c, dir, "type_vocab_size", 2);
    } else {
        image_ = config_int(c, dir, "image_size");
        patch_ = config_int(c, dir, "patch_size");
        channels_ = config_int(c, dir, "num_channels", 3);
        if (image_ % patch_) throw InputError(cfg + ": patch_size: does not divide image_size");
        if (image_ / patch_ > 1024) throw InputError(cfg + ": image_size / patch_size: above 1024");
        positions_ = (image_ / patch_) * (image_ / patch_) + 1;
        qkv_bias = config_bool(c, dir, "qkv_bias", true);
    }
    WeightStore w(dir);
    {
        // The config's sizes against the stored weights, before any allocation.
        const U table = family_ == "bert" ? (static_cast<U>(vocab_) + static_cast<U>(positions_)) * E
                                          : static_cast<U>(positions_) * E + E * static_cast<U>(channels_) * static_cast<U>(patch_) * static_cast<U>(patch_);
        const U want = static_cast<U>(n_layer_) * (4 * E * E + 2 * E * I) + table;
        if (want > w.stored_elements())
            throw InputError(cfg + ": the config implies at least " + std::to_string(want) + " weights, the checkpoint holds " +
                             std::to_string(w.stored_elements()));
    }
    const std::string head = family_ == "bert" ? "bert." : "vit.";
    const std::string pre = w.has(head + "embeddings." + (family_ == "bert" ? "word_embeddings.weight" : "cls_token")) ? head : "";
    const std::string e = pre + "embeddings.";
    // LayerNorm weights: "weight"/"bias", or the old "gamma"/"beta".
    auto ln = [&](const std::string& at, std::vector<float>& g, std::vector<float>& b) {
        const bool old = !w.has(at + ".weight") && w.has(at + ".gamma");
        g = w.get(at + (old ? ".gamma" : ".weight"), {E});
        b = w.get(at + (old ? ".beta" : ".bias"), {E});
    };
    if (family_ == "bert") {
        word_ = w.get(e + "word_embeddings.weight", {static_cast<U>(vocab_), E});
        pos_ = w.get(e + "position_embeddings.weight", {static_cast<U>(positions_), E});
        const U types = static_cast<U>(config_int(c, dir, "type_vocab_size", 2));
        type0_ = w.get(e + "token_type_embeddings.weight", {types, E});
        type0_.resize(static_cast<std::size_t>(E));  // token type 0 only
        ln(e + "LayerNorm", emb_ln_w_, emb_ln_b_);
    } else {
        cls_ = w.get(e + "cls_token", {1, 1, E});
        pos_ = w.get(e + "position_embeddings", {1, static_cast<U>(positions_), E});
        patch_w_ = w.get(e + "patch_embeddings.projection.weight", {E, static_cast<U>(channels_), static_cast<U>(patch_), static_cast<U>(patch_)});
        patch_b_ = w.get(e + "patch_embeddings.projection.bias", {E});
    }
    for (int l = 0; l < n_layer_; ++l) {
        const std::string h = pre + "encoder.layer." + std::to_string(l) + ".";
        const std::string att = h + (family_ == "bert" ? "attention.self." : "attention.attention.");
        Layer L;
        auto lin = [&](const std::string& at, std::vector<float>& W, std::vector<float>& b, U out, U in, bool bias) {
            W = w.get(at + ".weight", {out, in});
            b = bias ? w.get(at + ".bias", {out}) : std::vector<float>(static_cast<std::size_t>(out), 0.0f);
        };
        lin(att + "query", L.wq, L.bq, E, E, qkv_bias);
        lin(att + "key", L.wk, L.bk, E, E, qkv_bias);
        lin(att + "value", L.wv, L.bv, E, E, qkv_bias);
        lin(h + "attention.output.dense", L.wo, L.bo, E, E, true);
        lin(h + "intermediate.dense", L.w1, L.b1, I, E, true);
        lin(h + "output.dense", L.w2, L.b2, E, I, true);
        if (family_ == "bert") {
            ln(h + "attention.output.LayerNorm", L.ln1_w, L.ln1_b);  // after attention (post-LN)
            ln(h + "output.LayerNorm", L.ln2_w, L.ln2_b);
        } else {
            ln(h + "layernorm_before", L.ln1_w, L.ln1_b);  // before attention (pre-LN)
            ln(h + "layernorm_after", L.ln2_w, L.ln2_b);
        }
        layers_.push_back(std::move(L));
    }
}

void EncoderModel::forward_tokens(const std::vector<int>& tokens) {
    if (family_ != "bert") throw InputError("rankcert extract: a vit model needs --pixels, not tokens");
    if (tokens.empty()) throw InputError("tokens: none given");
    if (tokens.size() > static_cast<std::size_t>(positions_))
        throw InputError("tokens: " + std::to_string(tokens.size()) + " exceed the model's max_position_embeddings " +
                         std::to_string(positions_));
    const std::size_t E = static_cast<std::size_t>(E_);
    std::vector<float> x(tokens.size() * E);
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const int id = tokens[t];
        if (id < 0 || id >= vocab_) throw InputError("tokens: id " + std::to_string(id) + " is outside the vocabulary");
        for (std::size_t i = 0; i < E; ++i)
            x[t * E + i] = word_[static_cast<std::size_t>(id) * E + i] + pos_[t * E + i] + type0_[i];
    }
    run(std::move(x));
}

void EncoderModel::forward_pixels(const NdTensor& px, const std::string& where) {
    if (family_ != "vit") throw InputError("rankcert extract: --pixels needs a vit model");
    std::vector<std::uint64_t> s = px.shape;
    if (s.size() == 4 && s[0] == 1) s.erase(s.begin());
    const auto C = static_cast<std::uint64_t>(channels_), H = static_cast<std::uint64_t>(image_);
    if (s.size() != 3 || s[0] != C)
        throw InputError(where + ": shape must be [" + std::to_string(C) + ", H, W] or [1, " + std::to_string(C) + ", H, W]");
    if (s[1] != H || s[2] != H)
        throw InputError(where + ": image is " + std::to_string(s[1]) + " x " + std::to_string(s[2]) + ", the model's image_size is " +
                         std::to_string(H) + " x " + std::to_string(H) + " (resize it first)");
    if (px.dtype != "f32" && px.dtype != "f64" && px.dtype != "f16" && px.dtype != "bf16")
        throw InputError(where + ": dtype " + px.dtype + " is not a float type (give the normalised pixel values)");
    const std::vector<float> img = to_float32(px);
    for (float v : img)
        if (!std::isfinite(v)) throw InputError(where + ": a pixel value is not finite");
    const std::size_t E = static_cast<std::size_t>(E_), p = static_cast<std::size_t>(patch_), g = static_cast<std::size_t>(image_ / patch_),
                      n = static_cast<std::size_t>(image_);
    std::vector<float> x((g * g + 1) * E);
    for (std::size_t i = 0; i < E; ++i) x[i] = cls_[i] + pos_[i];
    for (std::size_t r = 0; r < g; ++r)
        for (std::size_t c = 0; c < g; ++c) {
            const std::size_t t = 1 + r * g + c;
            for (std::size_t o = 0; o < E; ++o) {
                float acc = patch_b_[o];
                for (std::size_t ch = 0; ch < C; ++ch)
                    for (std::size_t a = 0; a < p; ++a)
                        for (std::size_t b = 0; b < p; ++b)
                            acc += patch_w_[((o * C + ch) * p + a) * p + b] * img[(ch * n + r * p + a) * n + c * p + b];
                x[t * E + o] = acc + pos_[t * E + o];
            }
        }
    run(std::move(x));
}

void EncoderModel::run(std::vector<float> xs) {
    using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using MapM = Eigen::Map<const MatF>;
    using MapV = Eigen::Map<const Eigen::RowVectorXf>;
    const Eigen::Index E = E_, hs = head_size(), I = inner_;
    const Eigen::Index T = static_cast<Eigen::Index>(xs.size()) / E;
    T_ = static_cast<std::size_t>(T);
    MatF x = Eigen::Map<MatF>(xs.data(), T, E);
    auto layer_norm = [&](const MatF& in, const std::vector<float>& g, const std::vector<float>& b) {
        return layer_norm_rows(in, g, b, ln_eps_);
    };
    // y = x W^T + b for a Linear layer's weight [out, in].
    auto linear = [&](const MatF& in, const std::vector<float>& W, const std::vector<float>& b, Eigen::Index out) {
        MatF y = in * MapM(W.data(), out, in.cols()).transpose();
        y.rowwise() += MapV(b.data(), out);
        return y;
    };
    const bool tanh_gelu = act_ != "gelu";
    auto gelu = [tanh_gelu](float z) { return tanh_gelu ? gelu_tanh(z) : 0.5f * z * (1.0f + std::erf(z / std::sqrt(2.0f))); };
    if (family_ == "bert") x = layer_norm(x, emb_ln_w_, emb_ln_b_);
    q_.assign(static_cast<std::size_t>(n_layer_), {});
    k_.assign(static_cast<std::size_t>(n_layer_), {});
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const bool pre_ln = family_ == "vit";
    for (int l = 0; l < n_layer_; ++l) {
        const Layer& L = layers_[static_cast<std::size_t>(l)];
        const MatF h = pre_ln ? layer_norm(x, L.ln1_w, L.ln1_b) : x;
        const MatF q = linear(h, L.wq, L.bq, E), k = linear(h, L.wk, L.bk, E), v = linear(h, L.wv, L.bv, E);
        q_[static_cast<std::size_t>(l)].assign(q.data(), q.data() + q.size());
        k_[static_cast<std::size_t>(l)].assign(k.data(), k.data() + k.size());
        MatF att(T, E);
        for (Eigen::Index hd = 0; hd < n_head_; ++hd) {
            MatF s = (q.middleCols(hd * hs, hs) * k.middleCols(hd * hs, hs).transpose()) * scale;
            for (Eigen::Index i = 0; i < T; ++i) {  // no mask: every key
                const float mx = s.row(i).maxCoeff();
                s.row(i) = (s.row(i).array() - mx).exp();
                s.row(i) /= s.row(i).sum();
            }
            att.middleCols(hd * hs, hs) = s * v.middleCols(hd * hs, hs);
        }
        const MatF o = linear(att, L.wo, L.bo, E);
        if (pre_ln) {
            x += o;
            MatF f = linear(layer_norm(x, L.ln2_w, L.ln2_b), L.w1, L.b1, I).unaryExpr(gelu);
            x += linear(f, L.w2, L.b2, E);
        } else {
            x = layer_norm(x + o, L.ln1_w, L.ln1_b);
            MatF f = linear(x, L.w1, L.b1, I).unaryExpr(gelu);
            x = layer_norm(x + linear(f, L.w2, L.b2, E), L.ln2_w, L.ln2_b);
        }
    }
}

}  // namespace rankcert::producer
