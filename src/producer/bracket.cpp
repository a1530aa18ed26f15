// `rankcert bracket` (UNTRUSTED search; every verdict from the checker).
//
// Per eps: propose lower certificates (trivial, Neumann by greedy inverse and
// LP growth, tail) and upper certificates (the least rank whose refitted
// factor meets eps, a row-interpolative one below it), serialise each as a
// bundle file, and let the trusted checker decide it from that file.  A
// candidate that the checker does not verify is backed off (larger safety
// margin, one rank more) and retried.  The final bundle holds the winners and
// claims exactly the certified bracket; it is verified once more from disk.
#include "rankcert/producer/bracket.hpp"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace rankcert::producer {

namespace fs = std::filesystem;

std::vector<EpsValue> parse_eps_list(const std::string& text) {
    std::vector<EpsValue> out;
    std::size_t p = 0;
    while (p <= text.size()) {
        std::size_t q = text.find(',', p);
        if (q == std::string::npos) q = text.size();
        std::string item = text.substr(p, q - p);
        if (!item.empty()) {
            EpsValue e;
            e.text = item;
            e.exact = parse_rational_text(item, {"--eps", item});
            if (e.exact.sign() < 0) throw InputError("--eps: " + item + ": must be >= 0");
            e.approx = fmpq_get_d(e.exact.get());
            out.push_back(e);
        }
        p = q + 1;
    }
    if (out.empty()) throw InputError("--eps: no value given");
    return out;
}

namespace {

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(p.string() + ": cannot open file");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class T>
T le(const std::string& s, std::size_t off) {
    if (off + sizeof(T) > s.size()) throw std::out_of_range("zip");
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(s[off + i])) << (8 * i);
    return v;
}

// One member of a .npz (zip) archive: stored or deflated.
std::string npz_member(const std::string& zip, const std::string& member, const std::string& file) {
    try {
        // End of central directory: search the last 64 KiB for its signature.
        std::size_t eocd = std::string::npos;
        for (std::size_t i = zip.size() >= 22 ? zip.size() - 22 : 0; i + 1 > 0 && zip.size() - i < 70000; --i) {
            if (le<std::uint32_t>(zip, i) == 0x06054b50) {
                eocd = i;
                break;
            }
            if (i == 0) break;
        }
        if (eocd == std::string::npos) throw InputError(file + ": not a .npz (zip) file");
        const std::size_t count = le<std::uint16_t>(zip, eocd + 10);
        std::size_t cd = le<std::uint32_t>(zip, eocd + 16);
        for (std::size_t e = 0; e < count; ++e) {
            if (le<std::uint32_t>(zip, cd) != 0x02014b50) throw InputError(file + ": corrupt zip directory");
            const unsigned method = le<std::uint16_t>(zip, cd + 10);
            const std::size_t csize = le<std::uint32_t>(zip, cd + 20), usize = le<std::uint32_t>(zip, cd + 24);
            const std::size_t nlen = le<std::uint16_t>(zip, cd + 28), xlen = le<std::uint16_t>(zip, cd + 30),
                              clen = le<std::uint16_t>(zip, cd + 32);
            const std::size_t local = le<std::uint32_t>(zip, cd + 42);
            const std::string name = zip.substr(cd + 46, nlen);
            cd += 46 + nlen + xlen + clen;
            if (name != member && name != member + ".npy") continue;
            if (csize == 0xffffffff || usize == 0xffffffff) throw InputError(file + ": zip64 members are not supported");
            const std::size_t data = local + 30 + le<std::uint16_t>(zip, local + 26) + le<std::uint16_t>(zip, local + 28);
            if (data + csize > zip.size()) throw InputError(file + ": truncated zip member " + name);
            if (method == 0) return zip.substr(data, csize);
            if (method != 8) throw InputError(file + ": zip member " + name + " uses an unsupported compression");
            std::string out(usize, '\0');
            z_stream zs;
            std::memset(&zs, 0, sizeof zs);
            if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw InputError(file + ": zlib failure");
            zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zip.data() + data));
            zs.avail_in = static_cast<uInt>(csize);
            zs.next_out = reinterpret_cast<Bytef*>(out.data());
            zs.avail_out = static_cast<uInt>(usize);
            int rc = inflate(&zs, Z_FINISH);
            inflateEnd(&zs);
            if (rc != Z_STREAM_END || zs.total_out != usize) throw InputError(file + ": corrupt deflate data in " + name);
            return out;
        }
        throw InputError(file + ": no member \"" + member + "\" in the archive");
    } catch (const std::out_of_range&) {
        throw InputError(file + ": truncated zip file");
    }
}

}  // namespace

Matrix read_tensor(const std::string& spec, bool allow_neg_inf) {
    std::string path = spec, name;
    auto colon = spec.rfind(':');
    if (colon != std::string::npos && colon > 0 && !fs::exists(spec)) {
        path = spec.substr(0, colon);
        name = spec.substr(colon + 1);
    }
    const fs::path p(path);
    if (!fs::exists(p)) throw InputError(path + ": no such file");
    const std::string ext = p.extension().string();
    if (ext == ".npz") {
        if (name.empty()) throw InputError(path + ": name the array: " + path + ":NAME");
        return parse_npy(npz_member(read_file(p), name, path), {path, name}, allow_neg_inf);
    }
    if (ext == ".safetensors") {
        if (name.empty()) throw InputError(path + ": name the tensor: " + path + ":NAME");
        const std::string bytes = read_file(p);
        ArrayLoader L(p.parent_path(), path);
        json ref = {{"safetensors", p.filename().string()}, {"tensor", name}, {"sha256", sha256_hex(bytes)}};
        return L.load(ref, {path, name}, allow_neg_inf);
    }
    return parse_npy(read_file(p), {path, "array"}, allow_neg_inf);
}

json exact_array_json(const Matrix& m, const std::string& dir, const std::string& name) {
    bool doubles = m.neg_inf.empty();
    Mat d(static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(m.cols));
    for (std::size_t i = 0; i < m.rows && doubles; ++i)
        for (std::size_t j = 0; j < m.cols && doubles; ++j) {
            const double v = fmpq_get_d(m(i, j).get());
            arf_t a;
            arf_init(a);
            arf_set_d(a, v);
            Rat back;
            arf_get_fmpq(back.get(), a);
            arf_clear(a);
            doubles = back == m(i, j);
            d(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v;
        }
    if (doubles) {
        json a = array_json(d, dir, name, 0);
        return a;
    }
    json data = json::array();
    for (std::size_t s = 0; s < m.size(); ++s)
        data.push_back(!m.neg_inf.empty() && m.neg_inf[s] ? std::string("-inf") : m.v[s].str());
    return {{"shape", {m.rows, m.cols}}, {"data", data}};
}

namespace {

struct Checked {
    Verdict verdict = Verdict::undecided;
    std::string detail;
};

class Session {
public:
    Session(const json& instance_json, const BracketOptions& opt) : inst_json_(instance_json), opt_(opt) {}

    json bundle(const EpsValue& eps, const std::vector<json>& certs, const json& claim) const {
        return {{"format", "rankcert/1"}, {"instance", inst_json_}, {"eps", eps.text},
                {"claim", claim},         {"certificates", certs},   {"provenance", opt_.provenance}};
    }

    // Have the checker decide one certificate, from a file.
    Checked check(const EpsValue& eps, const json& cert) const {
        const fs::path p = fs::path(opt_.out_dir) / (".candidate-" + opt_.stem + ".json");
        {
            std::ofstream out(p);
            out << bundle(eps, {cert}, json::object()).dump();
        }
        Checked c;
        try {
            Bundle b = load_bundle(p, p.string());
            Report r = verify(b, opt_.check);
            c.verdict = r.certificates.at(0).verdict;
            c.detail = r.certificates.at(0).detail;
        } catch (const InputError& e) {
            // A candidate the checker cannot read is a producer bug, not a
            // refutation: it is rejected (never verified) and said so.
            c.verdict = Verdict::undecided;
            c.detail = std::string("rejected, input error: ") + e.what();
        }
        fs::remove(p);
        return c;
    }

private:
    const json& inst_json_;
    const BracketOptions& opt_;
};

// Round a candidate's numbers to float32 when the float re-check still
// passes: bundles about half as large.  (The checker decides either way.)
void compact_factor(const Mat& A, FactorCandidate& c, double target) {
    Mat U = round_to_float32(c.U), W = round_to_float32(c.W);
    const double e = c.k ? max_row_l1(A - U * W.transpose()) : max_row_l1(A);
    if (e <= target) {
        c.U = U;
        c.W = W;
        c.float_error = e;
    }
}

void compact_neumann(const Mat& A, double eps, NeumannCandidate& c, double margin) {
    auto r = c.r;
    for (auto& e : r) e.v = static_cast<double>(static_cast<float>(e.v));
    const double v = neumann_float_value(A, eps, c.rows, r, c.N);
    if (v < 1 - margin) {
        c.r = r;
        c.float_value = v;
    }
}

void say(const BracketOptions& opt, const std::string& s) {
    if (opt.progress) opt.progress(s);
}

}  // namespace

Bundle parse_instance(const json& instance_json, const std::string& dir, const std::string& stem) {
    const fs::path probe = fs::path(dir) / (".instance-" + stem + ".json");
    {
        std::ofstream out(probe);
        out << json{{"format", "rankcert/1"}, {"instance", instance_json}, {"eps", 0}, {"certificates", json::array()}}.dump();
    }
    try {
        Bundle b = load_bundle(probe, probe.string());
        fs::remove(probe);
        return b;
    } catch (...) {
        fs::remove(probe);
        throw;
    }
}

std::vector<BracketResult> run_bracket(const json& instance_json, const BracketOptions& opt) {
    // Parse the instance exactly as the checker will.
    const Bundle parsed = parse_instance(instance_json, opt.out_dir, opt.stem);
    const Instance& inst = parsed.instance;
    say(opt, "computing a float approximation of A (" + std::to_string(inst.n) + " x " + std::to_string(inst.N) + ")");
    const Mat A = approximate_attention(inst);
    UpperOptions uopt = opt.upper;
    uopt.progress = opt.progress;
    LowerOptions lopt = opt.lower;
    lopt.progress = opt.progress;
    say(opt, "SVD");
    UpperSearch upper(A, uopt);
    Session session(instance_json, opt);
    const std::uint64_t full = std::min(inst.n, inst.N);

    struct State {
        std::uint64_t L = 0, U = 0;
        std::string lkind = "-", ukind = "-";
        json trivial, lower, upper;
        double seconds = 0, svd_rank = 0;
    };
    std::vector<State> states;
    for (const auto& eps : opt.eps) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::string stem = opt.stem + "-eps" + eps.text;
        std::uint64_t L = 0, U = full;
        std::string lkind = "-", ukind = "-";
        State st;

        // ---- lower bounds ----
        const double row_mass = max_row_l1(A);
        if (eps.approx < row_mass) {
            json triv = {{"bound", "lower"}, {"kind", "trivial"}, {"rank", 1}};
            if (session.check(eps, triv).verdict == Verdict::verified) {
                L = 1;
                lkind = "trivial";
                st.trivial = triv;
            }
        }
        json best_lower, best_upper;
        for (const auto& h : opt.hints) {
            const std::uint64_t r = h.at("rank").get<std::uint64_t>();
            const bool is_upper = h.at("bound") == "upper";
            if (is_upper ? r >= U : r <= L) continue;
            if (session.check(eps, h).verdict != Verdict::verified) continue;
            if (is_upper) {
                U = r;
                ukind = h.at("kind").get<std::string>();
                best_upper = h;
            } else {
                L = r;
                lkind = h.at("kind").get<std::string>();
                best_lower = h;
            }
        }
        if (eps.approx < row_mass) {
            say(opt, "eps " + eps.text + ": neumann greedy");
            LowerOptions lo = lopt;
            for (int attempt = 0; attempt < 3; ++attempt, lo.margin *= 100) {
                NeumannCandidate nc = neumann_greedy(A, eps.approx, lo);
                if (opt.lp && nc.rows.size() <= lo.lp_max_rows) {
                    say(opt, "eps " + eps.text + ": neumann LP growth from " + std::to_string(nc.rows.size()) + " rows");
                    nc = neumann_lp_grow(A, eps.approx, nc, lo);
                }
                if (nc.rows.size() <= L) break;
                compact_neumann(A, eps.approx, nc, lo.margin);
                json cj = neumann_json(nc, opt.out_dir, stem);
                if (session.check(eps, cj).verdict == Verdict::verified) {
                    L = nc.rows.size();
                    lkind = "neumann";
                    best_lower = cj;
                    break;
                }
            }
            if (opt.tail && L < full) {
                say(opt, "eps " + eps.text + ": tail");
                if (auto tc = tail_search(A, eps.approx, lopt); tc && tc->k + 1 > L) {
                    json cj = tail_json(*tc, opt.out_dir, stem);
                    if (session.check(eps, cj).verdict == Verdict::verified) {
                        L = tc->k + 1;
                        lkind = "tail";
                        best_lower = cj;
                    }
                }
            }
        }

        // ---- upper bounds ----
        const double target = eps.approx * (1 - uopt.margin) - 1e-15;
        // The rank plain SVD needs (bisection; error is close to monotone).
        std::size_t lo = 0, hi = full;
        while (lo < hi) {
            std::size_t mid = lo + (hi - lo) / 2;
            if (upper.svd_error(mid) <= target) hi = mid;
            else lo = mid + 1;
        }
        st.svd_rank = static_cast<double>(hi);
        if (hi <= full) {
            say(opt, "eps " + eps.text + ": factor search in [" + std::to_string(L) + ", " + std::to_string(hi) + "]");
            auto fc = upper.smallest_factor(std::min<std::size_t>(L, hi), hi, target);
            for (int attempt = 0; fc && attempt < 3; ++attempt) {
                compact_factor(A, *fc, target);
                json cj = factor_json(*fc, opt.out_dir, stem);
                if (session.check(eps, cj).verdict == Verdict::verified) {
                    if (fc->k < U) {
                        U = fc->k;
                        ukind = "factor";
                        best_upper = cj;
                    }
                    break;
                }
                fc = upper.factor(fc->k + 1, target * 0.999);
            }
            // Row-interpolative certificates: greedy rows (L1 fits), and
            // pivoted-QR rows one rank below the best so far.
            if (opt.interpolative && U > L && U > 0) {
                say(opt, "eps " + eps.text + ": interpolative greedy");
                // Seeded with the lower certificate's rows: when those rows
                // already span every row within eps, the bracket closes.
                std::vector<std::size_t> seed;
                if (!best_lower.is_null() && best_lower.value("kind", "") == "neumann")
                    seed = best_lower["rows"].get<std::vector<std::size_t>>();
                for (const auto& s : {seed, std::vector<std::size_t>{}}) {
                    RowInterpCandidate gi = upper.greedy_row_interpolative(target, s);
                    if (gi.rows.size() >= U) continue;
                    json cj = row_interp_json(gi, opt.out_dir, stem + (s.empty() ? ".gi" : ".gs"));
                    if (session.check(eps, cj).verdict == Verdict::verified) {
                        U = gi.rows.size();
                        ukind = "row_interpolative";
                        best_upper = cj;
                    }
                }
            }
            if (opt.interpolative && U > L && U > 0) {
                if (auto ri = upper.row_interpolative(U - 1, target)) {
                    json cj = row_interp_json(*ri, opt.out_dir, stem);
                    if (session.check(eps, cj).verdict == Verdict::verified) {
                        U = U - 1;
                        ukind = "row_interpolative";
                        best_upper = cj;
                    }
                }
            }
        }
        st.L = L;
        st.U = U;
        st.lkind = lkind;
        st.ukind = ukind;
        st.lower = best_lower;
        st.upper = best_upper;
        st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        states.push_back(st);
    }

    // r_eps is non-increasing in eps: a lower certificate found at a larger
    // eps, and an upper one found at a smaller eps, may hold here too.
    for (std::size_t a = 0; a < opt.eps.size(); ++a) {
        for (std::size_t b = 0; b < opt.eps.size(); ++b) {
            if (a == b) continue;
            const int c = cmp(opt.eps[b].exact, opt.eps[a].exact);
            if (c > 0 && !states[b].lower.is_null() && states[b].L > states[a].L) {
                if (session.check(opt.eps[a], states[b].lower).verdict == Verdict::verified) {
                    states[a].L = states[b].L;
                    states[a].lower = states[b].lower;
                    states[a].lkind = states[b].lkind + " (from eps " + opt.eps[b].text + ")";
                }
            }
            if (c < 0 && !states[b].upper.is_null() && states[b].U < states[a].U) {
                if (session.check(opt.eps[a], states[b].upper).verdict == Verdict::verified) {
                    states[a].U = states[b].U;
                    states[a].upper = states[b].upper;
                    states[a].ukind = states[b].ukind + " (from eps " + opt.eps[b].text + ")";
                }
            }
        }
    }

    // ---- the bundles, each verified from its file ----
    std::vector<BracketResult> results;
    std::set<std::string> keep;
    for (std::size_t a = 0; a < opt.eps.size(); ++a) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto& eps = opt.eps[a];
        const State& st = states[a];
        std::vector<json> winners;
        for (const json* c : {&st.trivial, &st.lower, &st.upper})
            if (!c->is_null()) winners.push_back(*c);
        const fs::path path = fs::path(opt.out_dir) / (opt.stem + "-eps" + eps.text + ".json");
        {
            std::ofstream out(path);
            out << session.bundle(eps, winners, {{"lower", st.L}, {"upper", st.U}}).dump() << "\n";
        }
        Bundle b = load_bundle(path, path.string());
        for (const auto& sc : b.sidecars) keep.insert(sc.path);
        Report r = verify(b, opt.check);
        BracketResult res;
        res.eps_text = eps.text;
        res.bundle_path = path.string();
        res.lower = r.lower;
        res.upper = r.upper;
        res.closed = r.closed;
        res.verdict = r.verdict;
        res.lower_kind = st.lkind;
        res.upper_kind = st.ukind;
        res.svd_rank = st.svd_rank;
        res.seconds = st.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        results.push_back(res);
    }
    // Remove sidecars of this run's candidates that did not win.
    for (const auto& e : fs::directory_iterator(opt.out_dir)) {
        const std::string f = e.path().filename().string();
        if (e.path().extension() != ".npy" || keep.count(f)) continue;
        for (const auto& eps : opt.eps)
            if (f.rfind(opt.stem + "-eps" + eps.text + ".", 0) == 0) {
                fs::remove(e.path());
                break;
            }
    }
    return results;
}

}  // namespace rankcert::producer
