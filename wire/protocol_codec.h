// What the message codecs of wire/protocol.h share (wire/protocol.cc,
// wire/protocol_snapshot.cc): each message lists its fields once, in wire
// order, in a `DS_FIELDS(Msg) { io(m.a, m.b); }` template that both
// directions run: FieldWriter appends each field, FieldReader reads it back.
// `DS_CODEC(Msg)` then defines Msg::Encode and Msg::Decode. Internal to wire/.
//
// A field's C++ type picks its wire type (wire_format.md): uint8_t, bool and
// enums on uint8_t: u8; uint32_t: u32; int32_t: i32; int64_t: i64; uint64_t:
// its bits as an i64; double: its IEEE-754 bits as an i64 (f64);
// std::string: str; Bytes: blob; a string list: u32 n, n x str; KeyValues:
// u32 n, n x {str, str}; a struct with its own DS_FIELDS: those fields in
// place; a vector of such structs: u32 n, then n of them.
//
// Decode refuses a payload that does not match exactly: after a short read
// every later field reads as zero and Decode says "truncated <Msg> payload";
// bytes left over, "<Msg> payload has N trailing bytes". `io.Check(fn)` is a
// decoding check at that point of the list (encoding skips it): it runs only
// while nothing was short, and its error, if any, is Decode's.
#pragma once

#include <bit>
#include <concepts>
#include <type_traits>
#include <utility>

#include "wire/protocol.h"

namespace ds::msg::codec {

// `M` is `T` or `const T`: one field list serves Encode (const) and Decode.
template <class M, class T>
concept Of = std::same_as<std::remove_const_t<M>, T>;

template <class T> inline constexpr bool kIsVector = false;
template <class T, class A> inline constexpr bool kIsVector<std::vector<T, A>> = true;

class FieldWriter {
 public:
  template <class... F>
  void operator()(const F&... f) { (Put(f), ...); }
  template <class Fn>
  void Check(Fn&&) {}
  Bytes Take() { return w_.Take(); }

 private:
  template <class T>
  void Put(const T& v) {
    if constexpr (std::is_enum_v<T>) Put(static_cast<std::underlying_type_t<T>>(v));
    else if constexpr (std::is_same_v<T, bool>) w_.U8(v ? 1 : 0);
    else if constexpr (std::is_same_v<T, uint8_t>) w_.U8(v);
    else if constexpr (std::is_same_v<T, uint32_t>) w_.U32(v);
    else if constexpr (std::is_same_v<T, int32_t>) w_.I32(v);
    else if constexpr (std::is_same_v<T, int64_t>) w_.I64(v);
    else if constexpr (std::is_same_v<T, uint64_t>) w_.I64(static_cast<int64_t>(v));
    else if constexpr (std::is_same_v<T, double>) w_.I64(std::bit_cast<int64_t>(v));
    else if constexpr (std::is_same_v<T, std::string>) w_.Str(v);
    else if constexpr (std::is_same_v<T, Bytes>) w_.Blob(v);
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) w_.StrList(v);
    else if constexpr (std::is_same_v<T, KeyValues>) w_.KvList(v);
    else if constexpr (kIsVector<T>) {
      w_.U32(static_cast<uint32_t>(v.size()));
      for (const auto& e : v) Put(e);
    } else {
      Fields(*this, v);  // a struct with its own DS_FIELDS
    }
  }
  PayloadWriter w_;
};

class FieldReader {
 public:
  explicit FieldReader(const Bytes& payload) : r_(payload) {}
  template <class... F>
  void operator()(F&... f) { (Get(f), ...); }
  template <class Fn>
  void Check(Fn&& check) {
    if (r_.ok() && error_.ok()) error_ = check();
  }
  // The first check's error, else "truncated <what> payload" / trailing bytes.
  Status Finish(const char* what) const { return error_.ok() ? r_.Finish(what) : error_; }

 private:
  template <class T>
  void Get(T& v) {
    if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> u{};
      Get(u);
      v = static_cast<T>(u);
    } else if constexpr (std::is_same_v<T, bool>) v = r_.U8() != 0;
    else if constexpr (std::is_same_v<T, uint8_t>) v = r_.U8();
    else if constexpr (std::is_same_v<T, uint32_t>) v = r_.U32();
    else if constexpr (std::is_same_v<T, int32_t>) v = r_.I32();
    else if constexpr (std::is_same_v<T, int64_t>) v = r_.I64();
    else if constexpr (std::is_same_v<T, uint64_t>) v = static_cast<uint64_t>(r_.I64());
    else if constexpr (std::is_same_v<T, double>) v = std::bit_cast<double>(r_.I64());
    else if constexpr (std::is_same_v<T, std::string>) v = r_.Str();
    else if constexpr (std::is_same_v<T, Bytes>) v = r_.Blob();
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) v = r_.StrList();
    else if constexpr (std::is_same_v<T, KeyValues>) v = r_.KvList();
    else if constexpr (kIsVector<T>) {
      for (uint32_t n = r_.U32(); r_.ok() && error_.ok() && n > 0; --n) {  // a lying count ends at the short read
        typename T::value_type e;
        Get(e);
        v.push_back(std::move(e));
      }
    } else {
      Fields(*this, v);
    }
  }
  PayloadReader r_;
  Status error_;
};

template <class M>
Bytes Encode(const M& m) {
  FieldWriter w;
  Fields(w, m);
  return w.Take();
}

template <class M>
Result<M> Decode(const Bytes& payload, const char* what) {
  FieldReader r(payload);
  M m;
  Fields(r, m);
  DS_RETURN_IF_ERROR(r.Finish(what));
  return m;
}

}  // namespace ds::msg::codec

// The field list of struct `Type` (in namespace ds::msg), in wire order:
// `DS_FIELDS(Hello) { io(m.role, m.name); }`. Internal linkage.
#define DS_FIELDS(Type)                                        \
  template <class Io, ::ds::msg::codec::Of<Type> M>            \
  [[maybe_unused]] static void Fields([[maybe_unused]] Io& io, [[maybe_unused]] M& m)
// Type::Encode and Type::Decode from its DS_FIELDS.
#define DS_CODEC(Type)                                                                          \
  Bytes Type::Encode() const { return ::ds::msg::codec::Encode(*this); }                         \
  Result<Type> Type::Decode(const Bytes& payload) { return ::ds::msg::codec::Decode<Type>(payload, #Type); }
