// rankcert extract (rankcert-produce); see src/cli/produce_main.cpp.
#include "produce.hpp"

#include <array>
#include <cmath>
#include <optional>

namespace rankcert::cli {

namespace {

void write_f32_npy(const std::string& path, const std::vector<float>& v, std::size_t rows, std::size_t cols) {
    Mat m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v[i * cols + j];
    write_npy(path, m, true);
}

// The token ids of --tokens "1,2,3" or a --tokens-file (a JSON list, or ids
// separated by commas or white space).
std::vector<int> parse_tokens(const std::string& text, const std::string& where) {
    std::vector<int> out;
    std::size_t p = 0;
    while ((p = text.find_first_of("0123456789-", p)) != std::string::npos) {
        std::size_t e = text.find_first_not_of("0123456789", p + 1);
        if (e == std::string::npos) e = text.size();
        const std::string item = text.substr(p, e - p);
        if (item == "-" || item.size() > 9) throw InputError(where + ": \"" + item.substr(0, 12) + "\" is not a token id");
        out.push_back(std::stoi(item));
        if (out.back() < 0) throw InputError(where + ": token id " + item + " is negative");
        p = e;
    }
    for (char ch : text)
        if (!std::isdigit(static_cast<unsigned char>(ch)) && !std::isspace(static_cast<unsigned char>(ch)) &&
            std::string(",[]-").find(ch) == std::string::npos)
            throw InputError(where + ": unexpected character (give token ids as 1,2,3 or a JSON list)");
    if (out.empty()) throw InputError(where + ": no token ids");
    return out;
}

std::string file_sha(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return sha256_hex(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

// What a forward pass recorded: per layer, q (T x n_heads*hs) and k (T x n_kv*hs).
struct Recorded {
    int n_layers, n_heads, n_kv_heads, head_size;
    const std::vector<std::vector<float>>& q;
    const std::vector<std::vector<float>>& k;
};

int write_instances(const Recorded& r, std::size_t T, const std::string& out, const std::string& name, const json& base_prov,
                    const std::array<std::string, 2>& qk_note, const std::string& mask = "causal") {
    // Weights or inputs that overflow float32 give inf/NaN queries: say so
    // here rather than write instances the checker must refuse.
    for (int l = 0; l < r.n_layers; ++l)
        for (const auto* v : {&r.q[static_cast<std::size_t>(l)], &r.k[static_cast<std::size_t>(l)]})
            for (float x : *v)
                if (!std::isfinite(x))
                    throw InputError("rankcert extract: layer " + std::to_string(l) +
                                     ": a query or key is not finite in float32 (weights or input out of range)");
    fs::create_directories(out);
    const std::size_t hs = static_cast<std::size_t>(r.head_size), qdim = hs * static_cast<std::size_t>(r.n_heads),
                      kdim = hs * static_cast<std::size_t>(r.n_kv_heads);
    const int kv_mul = r.n_heads / r.n_kv_heads;
    int written = 0;
    for (int l = 0; l < r.n_layers; ++l) {
        const auto& Q = r.q[static_cast<std::size_t>(l)];
        const auto& K = r.k[static_cast<std::size_t>(l)];
        for (int g = 0; g < r.n_kv_heads; ++g) {
            std::vector<float> kh(T * hs);
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t i = 0; i < hs; ++i) kh[t * hs + i] = K[t * kdim + static_cast<std::size_t>(g) * hs + i];
            write_f32_npy(out + "/" + name + "-L" + std::to_string(l) + "-KV" + std::to_string(g) + ".k.npy", kh, T, hs);
        }
        for (int h = 0; h < r.n_heads; ++h) {
            std::vector<float> qh(T * hs);
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t i = 0; i < hs; ++i) qh[t * hs + i] = Q[t * qdim + static_cast<std::size_t>(h) * hs + i];
            const std::string stem = name + "-L" + std::to_string(l) + "-H" + std::to_string(h);
            const std::string qfile = stem + ".q.npy";
            const std::string kfile = name + "-L" + std::to_string(l) + "-KV" + std::to_string(h / kv_mul) + ".k.npy";
            write_f32_npy(out + "/" + qfile, qh, T, hs);
            json inst = {{"kind", "qk"},
                         {"q", {{"npy", qfile}, {"sha256", file_sha(out + "/" + qfile)}}},
                         {"k", {{"npy", kfile}, {"sha256", file_sha(out + "/" + kfile)}}},
                         {"scale", {{"rsqrt", hs}}},
                         {"mask", mask}};
            json prov = base_prov;
            prov["layer"] = l;
            prov["head"] = h;
            prov["kv_head"] = h / kv_mul;
            prov["tokens"] = T;
            prov["q"] = qk_note[0];
            prov["k"] = qk_note[1];
            std::ofstream(out + "/" + stem + ".json") << json{{"instance", inst}, {"provenance", prov}}.dump(1) << "\n";
            ++written;
        }
    }
    std::cout << "wrote " << written << " instances (" << r.n_layers << " layers x " << r.n_heads << " heads, " << T
              << " tokens) to " << out << "\n";
    return 0;
}

}  // namespace

int extract_main(int argc, char** argv) {
    CLI::App app{"rankcert extract: run a model over a text and write, for every layer and query head, the float32 "
                 "queries and keys the model's attention uses (post-RoPE for llama) with the model's mask (causal "
                 "for decoders, none for encoders) as an instance (JSON + .npy sidecars).  Models: llama2.c "
                 "checkpoints (--checkpoint) and HuggingFace folders of the llama, mistral, gpt2, bert and vit "
                 "families (--hf).",
                 "rankcert extract"};
    std::string checkpoint, hf, tokenizer, text, text_file, tokens_text, tokens_file, out = ".", name = "text", generate, pixels;
    int steps = 64;
    std::optional<std::uint64_t> seed;
    double temperature = 1.0;
    app.add_option("--checkpoint", checkpoint, "llama2.c checkpoint (.bin)");
    app.add_option("--hf", hf, "HuggingFace model folder (config.json + model.safetensors): llama, mistral, gpt2, bert or vit");
    app.add_option("--pixels", pixels, "vit: the image, a normalised float32 .npy of shape [C,H,W] or [1,C,H,W] (H, W = image_size)");
    app.add_option("--tokenizer", tokenizer, "llama2.c tokenizer (tok*.bin), to encode --text");
    app.add_option("--text", text, "Text to run the model over");
    app.add_option("--text-file", text_file, "File holding the text");
    app.add_option("--tokens", tokens_text, "Token ids instead of a text: 1,2,3 (e.g. from the model's own tokenizer)");
    app.add_option("--tokens-file", tokens_file, "File holding token ids (JSON list or separated by commas/spaces)");
    app.add_option("--out", out, "Output folder");
    app.add_option("--name", name, "Stem of the written files (default text)");
    app.add_option("--generate", generate, "Instead: print the greedy continuation of this prompt (llama family)");
    app.add_option("--steps", steps, "Tokens to generate with --generate")->check(CLI::Range(1, 1 << 20));
    app.add_option("--seed", seed, "With --generate: sample the continuation (softmax of logits / --temperature) from this seed "
                                   "instead of taking the arg-max; the same seed gives the same text everywhere");
    app.add_option("--temperature", temperature, "Sampling temperature for --seed (default 1)")->check(CLI::Range(1e-3, 1e3));
    return run_command(app, argc, argv, "rankcert extract", [&]() -> int {
        if (checkpoint.empty() == hf.empty()) throw InputError("rankcert extract: give exactly one of --checkpoint, --hf");
        const std::string family = hf.empty() ? "llama2c" : hf_model_type(hf);
        if (family != "llama2c" && family != "llama" && family != "mistral" && family != "qwen2" && family != "gpt2" && family != "bert" && family != "vit")
            throw InputError(hf + "/config.json: model_type: \"" + family.substr(0, 30) +
                             "\" is not supported (llama, mistral, qwen2, gpt2, bert, vit)");
        if (!pixels.empty() && family != "vit") throw InputError("rankcert extract: --pixels is for vit models only");
        if (!text_file.empty()) {
            std::ifstream in(text_file);
            if (!in) throw InputError(text_file + ": cannot open file");
            text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        }
        if (!tokens_file.empty()) {
            std::ifstream in(tokens_file);
            if (!in) throw InputError(tokens_file + ": cannot open file");
            tokens_text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        }
        const bool have_tokens = !tokens_text.empty() || !tokens_file.empty();
        if (family != "vit" && have_tokens == (!text.empty() || !generate.empty()))
            throw InputError("rankcert extract: give a text (--text, --text-file, --generate) or token ids (--tokens, --tokens-file), not both");
        json prov = {{"model", hf.empty() ? fs::path(checkpoint).filename().string() : fs::path(hf).filename().string()}};
        if (!hf.empty()) {
            prov["model_type"] = family;
            for (const char* f : {"config.json", "model.safetensors"})
                if (path_exists(fs::path(hf) / f)) prov[std::string(f) + "_sha256"] = file_sha((fs::path(hf) / f).string());
        } else {
            prov["checkpoint_sha256"] = file_sha(checkpoint);
        }
        if (family == "vit") {
            if (pixels.empty()) throw InputError("rankcert extract: a vit model needs --pixels IMG.npy (a normalised float32 [3,H,W] image)");
            if (!text.empty() || !tokens_text.empty() || !tokens_file.empty() || !generate.empty())
                throw InputError("rankcert extract: a vit model reads --pixels, not a text or token ids");
            EncoderModel model(hf);
            model.forward_pixels(parse_npy_nd(read_file_bytes(pixels), pixels), pixels);
            prov["pixels"] = fs::path(pixels).filename().string();
            prov["pixels_sha256"] = file_sha(pixels);
            return write_instances({model.n_layers(), model.n_heads(), model.n_heads(), model.head_size(), model.recorded_q(),
                                    model.recorded_k()},
                                   model.tokens(), out, name, prov,
                                   {"float32 queries of this head (query Linear output, vit forward pass, rankcert extract; token 0 is CLS, "
                                    "then the patches row by row)", "float32 keys of this head (key Linear output)"},
                                   "none");
        }
        if (family == "bert") {
            if (!have_tokens) throw InputError("rankcert extract: a bert model needs --tokens or --tokens-file (its WordPiece tokenizer is not built in)");
            EncoderModel model(hf);
            const auto tokens = parse_tokens(tokens_text, tokens_file.empty() ? "--tokens" : tokens_file);
            model.forward_tokens(tokens);
            prov["token_ids"] = tokens;
            return write_instances({model.n_layers(), model.n_heads(), model.n_heads(), model.head_size(), model.recorded_q(),
                                    model.recorded_k()},
                                   tokens.size(), out, name, prov,
                                   {"float32 queries of this head (query Linear output, bert forward pass, token type 0, rankcert extract)",
                                    "float32 keys of this head (key Linear output)"},
                                   "none");
        }
        if (family == "gpt2") {
            if (!have_tokens) throw InputError("rankcert extract: a gpt2 model needs --tokens or --tokens-file (its BPE tokenizer is not built in)");
            Gpt2Model model(hf);
            const auto tokens = parse_tokens(tokens_text, tokens_file.empty() ? "--tokens" : tokens_file);
            model.forward(tokens);
            prov["token_ids"] = tokens;
            return write_instances({model.n_layers(), model.n_heads(), model.n_heads(), model.head_size(), model.recorded_q(),
                                    model.recorded_k()},
                                   tokens.size(), out, name, prov, {"float32 queries of this head (c_attn output, gpt2 forward pass, rankcert extract)",
                                    "float32 keys of this head (c_attn output)"});
        }
        Llama2Model model = hf.empty() ? Llama2Model(checkpoint) : load_hf_llama(hf);
        const auto& c = model.config();
        std::vector<int> tokens;
        if (have_tokens) {
            tokens = parse_tokens(tokens_text, tokens_file.empty() ? "--tokens" : tokens_file);
            prov["token_ids"] = tokens;
        } else {
            if (tokenizer.empty()) throw InputError("rankcert extract: --text needs --tokenizer (or give --tokens)");
            Llama2Tokenizer tok(tokenizer, c.vocab_size);
            if (!generate.empty()) {
                auto toks = seed ? model.sample(tok.encode(generate), steps, *seed, temperature)
                                 : model.greedy(tok.encode(generate), steps);
                std::string s;
                for (std::size_t i = 1; i < toks.size(); ++i) s += tok.decode(toks[i - 1], toks[i]);
                std::cout << s << "\n";
                return 0;
            }
            tokens = tok.encode(text);
            prov["text"] = text;
        }
        if (tokens.size() > static_cast<std::size_t>(c.seq_len))
            throw InputError("text: " + std::to_string(tokens.size()) + " tokens exceed seq_len " + std::to_string(c.seq_len));
        if (family == "mistral" || family == "qwen2") {  // a window shorter than the text would change the mask
            const std::int64_t window = hf_sliding_window(hf);
            if (window > 0 && tokens.size() > static_cast<std::size_t>(window))
                throw InputError(hf + "/config.json: sliding_window: " + std::to_string(window) + " is shorter than the " +
                                 std::to_string(tokens.size()) + " tokens (the banded mask is not supported)");
        }
        model.forward(tokens, true);
        return write_instances({c.n_layers, c.n_heads, c.n_kv_heads, c.head_size(), model.recorded_q(), model.recorded_k()},
                               tokens.size(), out, name, prov, {"post-RoPE float32 queries of this head (llama2.c forward pass, rankcert extract)",
                                "post-RoPE float32 keys of its key head"});
    });
}

}  // namespace rankcert::cli
