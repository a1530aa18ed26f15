// rankcert extract (rankcert-produce); see src/cli/produce_main.cpp.
#include "produce.hpp"

namespace rankcert::cli {

namespace {

void write_f32_npy(const std::string& path, const std::vector<float>& v, std::size_t rows, std::size_t cols) {
    Mat m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v[i * cols + j];
    write_npy(path, m, true);
}

}  // namespace

int extract_main(int argc, char** argv) {
    CLI::App app{"rankcert extract: run a llama2.c checkpoint over a text and write, for every layer and query head, "
                 "the post-RoPE Q and K with the causal mask as an instance (JSON + .npy sidecars).",
                 "rankcert extract"};
    std::string checkpoint, tokenizer, text, text_file, out = ".", name = "text", generate;
    int steps = 64;
    app.add_option("--checkpoint", checkpoint, "llama2.c checkpoint (.bin)")->required();
    app.add_option("--tokenizer", tokenizer, "llama2.c tokenizer (tok*.bin)")->required();
    app.add_option("--text", text, "Text to run the model over");
    app.add_option("--text-file", text_file, "File holding the text");
    app.add_option("--out", out, "Output folder");
    app.add_option("--name", name, "Stem of the written files (default text)");
    app.add_option("--generate", generate, "Instead: print the greedy continuation of this prompt");
    app.add_option("--steps", steps, "Tokens to generate with --generate");
    return run_command(app, argc, argv, "rankcert extract", [&]() -> int {
        Llama2Model model(checkpoint);
        const auto& c = model.config();
        Llama2Tokenizer tok(tokenizer, c.vocab_size);
        if (!generate.empty()) {
            auto toks = model.greedy(tok.encode(generate), steps);
            std::string s;
            for (std::size_t i = 1; i < toks.size(); ++i) s += tok.decode(toks[i - 1], toks[i]);
            std::cout << s << "\n";
            return 0;
        }
        if (!text_file.empty()) {
            std::ifstream in(text_file);
            if (!in) throw InputError(text_file + ": cannot open file");
            text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        }
        if (text.empty()) throw InputError("rankcert extract: give --text or --text-file");
        const auto tokens = tok.encode(text);
        if (tokens.size() > static_cast<std::size_t>(c.seq_len))
            throw InputError("text: " + std::to_string(tokens.size()) + " tokens exceed seq_len " + std::to_string(c.seq_len));
        model.forward(tokens, true);
        fs::create_directories(out);
        const std::size_t T = tokens.size(), hs = static_cast<std::size_t>(c.head_size()),
                          dim = static_cast<std::size_t>(c.dim), kv = static_cast<std::size_t>(c.kv_dim());
        const int kv_mul = c.n_heads / c.n_kv_heads;
        auto file_sha = [](const std::string& path) {
            std::ifstream in(path, std::ios::binary);
            return sha256_hex(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
        };
        const std::string ck_sha = file_sha(checkpoint);
        int written = 0;
        for (int l = 0; l < c.n_layers; ++l) {
            const auto& Q = model.recorded_q()[static_cast<std::size_t>(l)];
            const auto& K = model.recorded_k()[static_cast<std::size_t>(l)];
            for (int g = 0; g < c.n_kv_heads; ++g) {
                std::vector<float> kh(T * hs);
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < hs; ++i) kh[t * hs + i] = K[t * kv + static_cast<std::size_t>(g) * hs + i];
                write_f32_npy(out + "/" + name + "-L" + std::to_string(l) + "-KV" + std::to_string(g) + ".k.npy", kh, T, hs);
            }
            for (int h = 0; h < c.n_heads; ++h) {
                std::vector<float> qh(T * hs);
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < hs; ++i) qh[t * hs + i] = Q[t * dim + static_cast<std::size_t>(h) * hs + i];
                const std::string stem = name + "-L" + std::to_string(l) + "-H" + std::to_string(h);
                const std::string qfile = stem + ".q.npy";
                const std::string kfile = name + "-L" + std::to_string(l) + "-KV" + std::to_string(h / kv_mul) + ".k.npy";
                write_f32_npy(out + "/" + qfile, qh, T, hs);
                auto sha = [&](const std::string& f) { return file_sha(out + "/" + f); };
                json inst = {{"kind", "qk"},
                             {"q", {{"npy", qfile}, {"sha256", sha(qfile)}}},
                             {"k", {{"npy", kfile}, {"sha256", sha(kfile)}}},
                             {"scale", {{"rsqrt", hs}}},
                             {"mask", "causal"}};
                json prov = {{"model", fs::path(checkpoint).filename().string()},
                             {"checkpoint_sha256", ck_sha},
                             {"layer", l},
                             {"head", h},
                             {"kv_head", h / kv_mul},
                             {"text", text},
                             {"tokens", T},
                             {"q", "post-RoPE float32 queries of this head (llama2.c forward pass, rankcert extract)"},
                             {"k", "post-RoPE float32 keys of its key head"}};
                std::ofstream(out + "/" + stem + ".json") << json{{"instance", inst}, {"provenance", prov}}.dump(1) << "\n";
                ++written;
            }
        }
        std::cout << "wrote " << written << " instances (" << c.n_layers << " layers x " << c.n_heads << " heads, " << T
                  << " tokens) to " << out << "\n";
        return 0;
    });
}

}  // namespace rankcert::cli
