// N-dimensional tensors from .npy, .npz and safetensors files, for the
// producer's command line (UNTRUSTED side: it only cuts 2-D slices out of
// stacked tensors and reads model weights; every number that reaches a
// certificate is re-read exactly by the checker from the slice it writes).
//
// A tensor spec names a file, an array inside it and a selection of leading
// indices:
//   F.npy            F.npy[3]          F.npy[0,5]
//   F.npz:NAME       F.npz:NAME[0,5]
//   F.safetensors:NAME               F.safetensors:NAME[2]
// The indices pick along the leading axes; what remains must be a matrix (or
// a vector where one is asked for).  An index out of range is an input error
// naming the file, the tensor and the axis.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rankcert::producer {

struct NdTensor {
    std::string dtype;                // "f16", "bf16", "f32", "f64", "bool", "u8", "i32", "i64"
    std::vector<std::uint64_t> shape;  // C order
    std::string bytes;                // little-endian elements, C order
    std::string where;                // "file" or "file:name", for messages
    std::size_t itemsize() const;
    std::uint64_t count() const;
};

struct TensorSpec {
    std::string path, name;           // name empty for .npy
    std::vector<std::uint64_t> index;  // leading-axis selection
    bool has_index = false;
};

// Whether a path names something, never throwing (a name too long or
// unreadable folders count as absent): every path from input goes through it.
bool path_exists(const std::filesystem::path& p) noexcept;

// A path for an error line: at most about 120 characters (its start and end).
std::string shown_path(const std::string& p);

// The whole file as bytes (InputError "PATH: cannot open file").
std::string read_file_bytes(const std::string& path);

// Split "F.safetensors:NAME[1,2]" into its parts (InputError on a malformed selector).
TensorSpec parse_tensor_spec(const std::string& spec);

// Read one tensor from .npy bytes (C or Fortran order; Fortran is reordered).
NdTensor parse_npy_nd(const std::string& bytes, const std::string& where);
// The header of a safetensors file, parsed and checked once: every entry's
// dtype, shape and data_offsets, each inside the file, and no two entries'
// bytes overlapping (InputError otherwise).  Reading a tensor from it is then
// a lookup, so a file of many tensors costs linear time.
struct SafetensorsEntry {
    std::string dtype;                 // as NdTensor::dtype
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0, end = 0;  // relative to the data section
};
struct SafetensorsIndex {
    std::size_t data_off = 0;
    std::map<std::string, SafetensorsEntry> entries;
};
SafetensorsIndex safetensors_index(const std::string& bytes, const std::string& where);
// One tensor through an index of the same bytes.
NdTensor safetensors_tensor(const std::string& bytes, const SafetensorsIndex& ix, const std::string& name, const std::string& where);
// Read one tensor from safetensors bytes (the whole file).
NdTensor parse_safetensors_nd(const std::string& bytes, const std::string& name, const std::string& where);
// The names of the tensors in a safetensors file.
std::vector<std::string> safetensors_names(const std::string& bytes, const std::string& where);

// One member ("NAME" or "NAME.npy") of a .npz archive, stored or deflated.
// Members larger than the array limit (2^27 entries of 8 bytes, plus the
// header) are refused before anything is inflated, and inflation stops at
// the declared size.
std::string npz_member(const std::string& zip, const std::string& member, const std::string& file);

// Read the tensor a spec names and apply its selection.
NdTensor read_nd(const TensorSpec& spec);
// t[index...] along the leading axes.
NdTensor select(const NdTensor& t, const std::vector<std::uint64_t>& index);

// The elements as float32 (exact for f16/bf16/f32; f64 is rounded).
std::vector<float> to_float32(const NdTensor& t);

// The first bytes of a .npy file (format 1.0, C order): magic, version,
// header length and the header for dtype descr ("<f4") and shape, padded
// to 64 bytes.  numpy's own np.save pads differently between versions; this
// spelling is the one every rankcert program writes.
std::string npy_header(const std::string& descr, const std::vector<std::uint64_t>& shape);

// A .npy file (format 1.0, C order) holding the tensor bit for bit; bfloat16
// becomes float32 (exact), since .npy has no bfloat16.
std::string npy_bytes(const NdTensor& t);

}  // namespace rankcert::producer
