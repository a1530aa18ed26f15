// Exact input: numbers, .npy, safetensors, COO, and every input error path.
#include "helpers.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace rankcert;
using namespace rankcert::test;

namespace {
Rat R(const char* s) { return parse_rational_text(s, {"t", "x"}); }

// Expect load_bundle to throw an InputError whose one-line message names the
// file and contains `field` and `what`.
void expect_error(const TempDir& dir, const std::string& text, const std::string& field, const std::string& what) {
    auto p = dir.file("bad.json", text);
    try {
        load_bundle(p, "bad.json");
        FAIL("no error for " << text.substr(0, 200));
    } catch (const InputError& e) {
        std::string msg = e.what();
        INFO("message: " << msg);
        REQUIRE(msg.find('\n') == std::string::npos);
        REQUIRE(msg.rfind("bad.json", 0) == 0);
        REQUIRE(msg.find(field) != std::string::npos);
        REQUIRE(msg.find(what) != std::string::npos);
    }
}

std::string with_instance(const std::string& inst, const std::string& certs = "[]", const std::string& eps = "0.1") {
    return R"({"format":"rankcert/1","instance":)" + inst + R"(,"eps":)" + eps + R"(,"claim":{},"certificates":)" + certs + "}";
}

const std::string ok_matrix = R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0,1]}})";
}  // namespace

TEST_CASE("numbers are exact: decimals, rationals, hex floats", "[input]") {
    REQUIRE(R("0.1") == Rat(1, 10));
    REQUIRE(R("-2.5e-3") == Rat(-1, 400));
    REQUIRE(R("1E2") == Rat(100));
    REQUIRE(R(".5") == Rat(1, 2));
    REQUIRE(R("-3/7") == Rat(-3, 7));
    REQUIRE(R("0x1.8p-3") == Rat(3, 16));
    REQUIRE(R("-0x10p0") == Rat(-16));
    REQUIRE(R("0x.8p1") == Rat(1));
    REQUIRE(R("123456789012345678901234567890") * Rat(1) > Rat(1000000000));
    for (const char* bad : {"", "abc", "1/0", "1.2.3", "0x", "1e", "1e99999999", "nan", "0x1p99999999", "--1", "1/-2"})
        REQUIRE_THROWS_AS(R(bad), InputError);
}

TEST_CASE("JSON numbers are read as the decimal they spell", "[input]") {
    json j = parse_json_text(R"({"a": 0.1, "b": 1e-30, "c": 3, "d": -7, "e": 18446744073709551616123})", "t");
    Where w{"t", ""};
    REQUIRE(parse_rational(j["a"], w) == Rat(1, 10));
    REQUIRE(parse_rational(j["b"], w) == pow10neg(30));
    REQUIRE(parse_rational(j["c"], w) == Rat(3));
    REQUIRE(parse_rational(j["d"], w) == Rat(-7));
    REQUIRE(parse_rational(j["e"], w) > Rat(1000000000));
    Number rs = parse_number(parse_json_text(R"({"rsqrt": 128})", "t"), w, true, false);
    REQUIRE(rs.kind == Number::Kind::rsqrt);
    REQUIRE(rs.q == Rat(128));
    REQUIRE_THROWS_AS(parse_number(json("-inf"), w, false, false), InputError);
    REQUIRE(parse_number(json("-inf"), w, false, true).kind == Number::Kind::neg_inf);
}

TEST_CASE("IEEE values decode to the exact dyadic rational", "[input]") {
    Rat q;
    bool ni;
    REQUIRE(decode_f32(0x3dcccccd, q, &ni));  // float32(0.1)
    REQUIRE(q == Rat(13421773, 134217728));
    REQUIRE(decode_f16(0x3c00, q, &ni));
    REQUIRE(q == Rat(1));
    REQUIRE(decode_f16(0x0001, q, &ni));  // smallest subnormal 2^-24
    REQUIRE(q == Rat(1, 1ul << 24));
    REQUIRE(decode_bf16(0xc040, q, &ni));  // -3
    REQUIRE(q == Rat(-3));
    REQUIRE(decode_f64(0x3fb999999999999aull, q, &ni));  // double(0.1)
    REQUIRE(q == Rat(3602879701896397, 36028797018963968ul));
    REQUIRE_FALSE(decode_f32(0x7fc00000, q, &ni));  // NaN
    REQUIRE_FALSE(ni);
    REQUIRE_FALSE(decode_f32(0xff800000, q, &ni));  // -inf
    REQUIRE(ni);
}

TEST_CASE(".npy versions, dtypes and orders", "[input]") {
    Where w{"t.npy", "a"};
    SECTION("f8 C and Fortran order, versions 1-3") {
        for (int version : {1, 2, 3}) {
            Matrix c = parse_npy(npy_bytes("<f8", {2, 3}, f64_data({1, 2, 3, 4, 5, 0.5}), false, version), w);
            REQUIRE(c.rows == 2);
            REQUIRE(c.cols == 3);
            REQUIRE(c(1, 2) == Rat(1, 2));
            Matrix f = parse_npy(npy_bytes("<f8", {2, 3}, f64_data({1, 4, 2, 5, 3, 0.5}), true, version), w);
            for (std::size_t s = 0; s < 6; ++s) REQUIRE(f.v[s] == c.v[s]);
        }
    }
    SECTION("integer, bool and half dtypes") {
        std::string i4(8, '\0');
        std::int32_t a = -5, b = 7;
        std::memcpy(i4.data(), &a, 4);
        std::memcpy(i4.data() + 4, &b, 4);
        Matrix m = parse_npy(npy_bytes("<i4", {2}, i4), w);
        REQUIRE(m.is_vector);
        REQUIRE(m.v[0] == Rat(-5));
        REQUIRE(m.v[1] == Rat(7));
        Matrix bl = parse_npy(npy_bytes("|b1", {1, 2}, std::string("\x01\x00", 2)), w);
        REQUIRE(bl.v[0] == Rat(1));
        REQUIRE(bl.v[1] == Rat(0));
        Matrix h = parse_npy(npy_bytes("<f2", {1}, std::string("\x00\x3c", 2)), w);
        REQUIRE(h.v[0] == Rat(1));
        std::string i8(8, '\0');
        std::int64_t big = -(1ll << 62);
        std::memcpy(i8.data(), &big, 8);
        Matrix l = parse_npy(npy_bytes("<i8", {1}, i8), w);
        REQUIRE(l.v[0] == Rat(-(1l << 62)));
    }
    SECTION("errors") {
        REQUIRE_THROWS_WITH(parse_npy("garbage", w), Catch::Contains("bad magic"));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes("<f8", {2, 3}, f64_data({1, 2, 3})), w), Catch::Contains("truncated"));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes(">f8", {1}, f64_data({1})), w), Catch::Contains("unsupported .npy dtype"));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes("<f8", {1}, f64_data({std::nan("")})), w), Catch::Contains("NaN"));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes("<f8", {1}, f64_data({-INFINITY})), w), Catch::Contains("-inf"));
        REQUIRE(parse_npy(npy_bytes("<f8", {1}, f64_data({-INFINITY})), w, true).is_neg_inf(0, 0));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes("<f8", {100000000, 100000000}, ""), w), Catch::Contains("exceeds the limit"));
        REQUIRE_THROWS_WITH(parse_npy(npy_bytes("<f8", {2, 2, 2}, f64_data({1, 2, 3, 4, 5, 6, 7, 8})), w),
                            Catch::Contains("rank 1 or 2"));
        std::string bytes = npy_bytes("<f8", {2}, f64_data({1, 2}));
        REQUIRE_THROWS_WITH(parse_npy(bytes.substr(0, 20), w), Catch::Contains("truncated"));
    }
}

TEST_CASE("sidecars: npy and safetensors by hash, confined to the folder", "[input]") {
    TempDir dir;
    std::string npy = npy_bytes("<f8", {2, 2}, f64_data({1, 0, 0, 1}));
    dir.file("a.npy", npy);
    const std::string h = sha256_hex(npy);
    REQUIRE(h.size() == 64);
    Bundle b = load(dir, json::parse(with_instance(R"({"kind":"matrix","a":{"npy":"a.npy","sha256":")" + h + R"("}})")));
    REQUIRE(b.instance.n == 2);
    REQUIRE(b.sidecars.size() == 1);
    REQUIRE(b.sidecars[0].sha256 == h);

    // safetensors with F32, F16 and BF16 tensors.
    std::string data;
    auto put16 = [&](std::uint16_t v) { data += static_cast<char>(v & 0xff); data += static_cast<char>(v >> 8); };
    auto put32 = [&](std::uint32_t v) { for (int i = 0; i < 4; ++i) data += static_cast<char>((v >> (8 * i)) & 0xff); };
    put32(0x3f800000); put32(0); put32(0); put32(0x3f800000);  // F32 identity [0, 16)
    put16(0x3c00); put16(0); put16(0); put16(0x3c00);          // F16 identity [16, 24)
    put16(0x3f80); put16(0); put16(0); put16(0x3f80);          // BF16 identity [24, 32)
    std::string header = R"({"a32":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                         R"("a16":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]},)"
                         R"("abf":{"dtype":"BF16","shape":[2,2],"data_offsets":[24,32]},"__metadata__":{"x":"y"}})";
    std::string st(8, '\0');
    std::uint64_t hl = header.size();
    std::memcpy(st.data(), &hl, 8);
    st += header + data;
    dir.file("w.safetensors", st);
    const std::string hs = sha256_hex(st);
    for (const char* t : {"a32", "a16", "abf"}) {
        Bundle s = load(dir, json::parse(with_instance(R"({"kind":"matrix","a":{"safetensors":"w.safetensors","tensor":")" +
                                                       std::string(t) + R"(","sha256":")" + hs + R"("}})")));
        REQUIRE(s.instance.a(0, 0) == Rat(1));
        REQUIRE(s.instance.a(0, 1) == Rat(0));
        REQUIRE(s.instance.a(1, 1) == Rat(1));
    }
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"safetensors":"w.safetensors","tensor":"nope","sha256":")" + hs + R"("}})"),
                 "instance.a", "no tensor named");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"a.npy","sha256":"00"}})"), "instance.a.sha256",
                 "sha256 mismatch");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"../a.npy","sha256":"00"}})"), "instance.a.npy",
                 "leaves the bundle's folder");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"/etc/passwd","sha256":"00"}})"), "instance.a.npy",
                 "absolute");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"missing.npy","sha256":"00"}})"), "instance.a.npy",
                 "not a readable file");
    // A symlink pointing out of the folder is refused too.
    std::error_code ec;
    std::filesystem::create_symlink("/etc/hostname", dir.path / "link.npy", ec);
    if (!ec)
        expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"link.npy","sha256":"00"}})"), "instance.a.npy",
                     "outside the bundle's folder");
    // Truncated npy sidecar.
    std::string cut = npy.substr(0, npy.size() - 8);
    dir.file("cut.npy", cut);
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"npy":"cut.npy","sha256":")" + sha256_hex(cut) + R"("}})"),
                 "instance.a (cut.npy)", "truncated");
}

TEST_CASE("input errors name the file and the field", "[input]") {
    TempDir dir;
    expect_error(dir, "{\"format\": \"rankcert/1\", ", "bad.json", "malformed JSON");
    expect_error(dir, "[1, 2]", "(top level)", "JSON object");
    expect_error(dir, R"({"format":"rankcert/2"})", "format", "unsupported format");
    expect_error(dir, with_instance(R"({"kind":"attention"})"), "instance.kind", "unknown instance kind");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0]}})"), "instance.a.data",
                 "has 3 entries");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0,"nan"]}})"),
                 "instance.a.data[3]", "non-finite");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0,"inf"]}})"),
                 "instance.a.data[3]", "non-finite");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0,"-inf"]}})"),
                 "instance.a.data[3]", "only in logits");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[2,2],"data":[1,0,0,1e999]}})"), "bad.json",
                 "malformed JSON");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[1000000000,1000000000],"data":[]}})"),
                 "instance.a.shape[0]", "exceeds the limit");
    expect_error(dir, with_instance(R"({"kind":"matrix","a":{"shape":[-2,2],"data":[]}})"), "instance.a.shape[0]",
                 "non-negative");
    expect_error(dir, with_instance(R"({"kind":"logits","logits":{"shape":[1,2],"data":["-inf","-inf"]}})"),
                 "instance", "row 0 has no allowed entry");
    expect_error(dir,
                 with_instance(R"({"kind":"qk","q":{"shape":[2,1],"data":[1,2]},"k":{"shape":[3,2],"data":[1,2,3,4,5,6]},"scale":1})"),
                 "instance.k", "columns");
    expect_error(dir,
                 with_instance(R"({"kind":"qk","q":{"shape":[3,1],"data":[1,2,3]},"k":{"shape":[2,1],"data":[1,2]},"scale":1,"mask":"causal"})"),
                 "instance.mask", "N >= n");
    expect_error(dir,
                 with_instance(R"({"kind":"qk","q":{"shape":[1,1],"data":[1]},"k":{"shape":[1,1],"data":[1]},"scale":-1})"),
                 "instance.scale", "positive");
    expect_error(dir, with_instance(ok_matrix, "[]", "-0.1"), "eps", ">= 0");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"upper","kind":"magic","rank":1}])"),
                 "certificates[0].kind", "unknown certificate kind");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"upper","kind":"neumann","rank":1,"rows":[0],"r":{"shape":[2,1],"data":[1,0]}}])"),
                 "certificates[0].bound", "lower bound");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"lower","kind":"neumann","rank":2,"rows":[0,0],"r":{"shape":[2,2],"data":[1,0,0,1]}}])"),
                 "certificates[0].rows[1]", "repeated");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"lower","kind":"neumann","rank":1,"rows":[5],"r":{"shape":[2,1],"data":[1,0]}}])"),
                 "certificates[0].rows[0]", "out of range");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"lower","kind":"neumann","rank":1,"rows":[0],"r":{"shape":[2,1],"coo":{"row":[0,0],"col":[0,0],"val":[1,1]}}}])"),
                 "certificates[0].r.coo[1]", "repeated coordinate");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"upper","kind":"factor","rank":1,"u":{"shape":[2,1],"data":[1,1]},"w":{"shape":[3,1],"data":[1,1,1]}}])"),
                 "certificates[0].w", "does not match");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"upper","kind":"factor","rank":2,"u":{"shape":[2,1],"data":[1,1]},"w":{"shape":[2,1],"data":[1,1]}}])"),
                 "certificates[0].rank", "data prove rank 1");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"lower","kind":"tail","rank":2,"rows":[0],"k":1,"mu":-1,"r":{"shape":[2,1],"data":[1,0]},"f":{"shape":[1,0],"data":[]}}])"),
                 "certificates[0].mu", ">= 0");
    expect_error(dir, with_instance(ok_matrix, R"([{"bound":"lower","kind":"trivial"}])"), "certificates[0].rank", "missing");
}
