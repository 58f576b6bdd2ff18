import FuzzSupport
@testable import Verifiers
@testable import Toolkit

/// The program's entry (main.swift). Converting `fuzzForm` to a C pointer here, not in main.swift,
/// keeps its `@_cdecl` symbol in one object file, which debug (per-file) builds need.
func runFuzzer() -> Never { FuzzDriver.run(fuzzForm) }

/// The strict form parser (Citcon's legacy CHOP IPNs) and the `%XX` decoding under it. Beyond not
/// crashing: every name and value it yields is valid UTF-8 and every name is non-empty; encoding the
/// values again and parsing that gives the same values; percent decoding never grows the text.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForm(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzCheck.bytes(data, size)
    if let decoded = PercentDecoding.decode(bytes, plusIsSpace: true) {
        FuzzCheck.require(decoded.count <= bytes.count, "percent decoding grew the text")
        FuzzCheck.require(PercentDecoding.decode(encode(decoded), plusIsSpace: true) == decoded, "percent decoding does not round trip")
    }
    guard let form = FormBody(bytes) else { return 0 }
    let pairs = bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
    FuzzCheck.require(form.values.count == pairs.count, "\(pairs.count) pairs gave \(form.values.count) names")
    for (name, value) in form.values {
        FuzzCheck.require(!name.isEmpty, "accepted an empty name")
        FuzzCheck.require(String(validating: Array(name.utf8), as: UTF8.self) == name, "a name is not valid UTF-8")
        FuzzCheck.require(String(validating: Array(value.utf8), as: UTF8.self) == value, "a value is not valid UTF-8")
    }
    let encoded = form.values.sorted { $0.key < $1.key }
        .map { encode(Array($0.key.utf8)) + [UInt8(ascii: "=")] + encode(Array($0.value.utf8)) }
        .joined(separator: [UInt8(ascii: "&")])
    FuzzCheck.require(FormBody(Array(encoded))?.values == form.values, "re-encoded form parses differently")
    FuzzCheck.require((try? CitconBody.parse(bytes, format: .legacy))?.values.count == form.values.count,
                      "CitconBody disagrees with FormBody")
    return 0
}

/// Every byte but unreserved ones as `%XX`, so the text has one reading.
private func encode(_ bytes: [UInt8]) -> [UInt8] {
    let hex = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.append(byte)
        default:
            out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        }
    }
    return out
}
