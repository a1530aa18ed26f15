// rankcert extract: the llama2.c forward pass is right (greedy decoding
// reproduces the known continuation token for token), and broken checkpoints
// and tokenizers give one-line errors.
#include "helpers.hpp"
#include "rankcert/producer/llama2.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

using namespace rankcert;
using namespace rankcert::test;
using namespace rankcert::producer;

namespace {
std::string data(const std::string& rel) {
    const char* root = std::getenv("RANKCERT_SOURCE");
    REQUIRE(root != nullptr);
    return std::string(root) + "/data/stories260K/" + rel;
}
std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

TEST_CASE("stories260K: greedy decoding reproduces the reference continuation", "[extract]") {
    Llama2Model model(data("stories260K.bin"));
    const auto& c = model.config();
    REQUIRE(c.dim == 64);
    REQUIRE(c.n_layers == 5);
    REQUIRE(c.n_heads == 8);
    REQUIRE(c.n_kv_heads == 4);
    Llama2Tokenizer tok(data("tok512.bin"), c.vocab_size);
    const std::string expected =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw "
        "a big, red ball. She wanted to play with it, but it was too high.";
    // Token for token: the greedy tokens must equal the encoding of the text.
    const auto want = tok.encode(expected);
    const auto prompt = tok.encode("Once upon a time");
    auto got = model.greedy(prompt, static_cast<int>(want.size() - prompt.size()));
    REQUIRE(got.size() == want.size());
    std::string text;
    for (std::size_t i = 1; i < got.size(); ++i) text += tok.decode(got[i - 1], got[i]);
    REQUIRE(text == expected);
    REQUIRE(got == want);
}

TEST_CASE("stories260K: recorded Q and K have the right shapes", "[extract]") {
    Llama2Model model(data("stories260K.bin"));
    Llama2Tokenizer tok(data("tok512.bin"), model.config().vocab_size);
    auto t = tok.encode("The cat sat.");
    model.forward(t, true);
    REQUIRE(model.recorded_q().size() == 5);
    REQUIRE(model.recorded_q()[0].size() == t.size() * 64);
    REQUIRE(model.recorded_k()[4].size() == t.size() * 32);
}

TEST_CASE("broken checkpoints and tokenizers give clear errors", "[extract]") {
    TempDir dir;
    const std::string ck = slurp(data("stories260K.bin"));
    auto expect = [&](const std::string& name, const std::string& bytes, const std::string& what) {
        auto p = dir.file(name, bytes).string();
        try {
            Llama2Model m(p);
            FAIL("no error for " << name);
        } catch (const InputError& e) {
            INFO(e.what());
            REQUIRE(std::string(e.what()).find(name) != std::string::npos);
            REQUIRE(std::string(e.what()).find(what) != std::string::npos);
        }
    };
    expect("short.bin", ck.substr(0, 20), "truncated");
    expect("cut.bin", ck.substr(0, ck.size() - 100), "header implies");
    std::string neg = ck;
    std::int32_t minus = -64;
    std::memcpy(neg.data(), &minus, 4);
    expect("neg.bin", neg, "header.dim");
    std::string heads = ck;
    std::int32_t three = 3;
    std::memcpy(heads.data() + 12, &three, 4);
    expect("heads.bin", heads, "n_heads");
    // Tokenizer: truncated, and a vocab size that does not match.
    const std::string tk = slurp(data("tok512.bin"));
    auto tp = dir.file("tok.bin", tk.substr(0, tk.size() / 2)).string();
    REQUIRE_THROWS_WITH(Llama2Tokenizer(tp, 512), Catch::Contains("truncated tokenizer"));
    REQUIRE_THROWS_WITH(Llama2Tokenizer(data("tok512.bin"), 500), Catch::Contains("trailing bytes"));
    // A text longer than seq_len.
    Llama2Model model(data("stories260K.bin"));
    Llama2Tokenizer tok(data("tok512.bin"), 512);
    std::string long_text;
    for (int i = 0; i < 400; ++i) long_text += "zq ";
    REQUIRE_THROWS_WITH(model.forward(tok.encode(long_text), true), Catch::Contains("exceed the model's seq_len"));
}
