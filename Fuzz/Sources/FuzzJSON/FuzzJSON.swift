import Events
import FuzzSupport
@testable import Verifiers
@testable import Toolkit

/// The program's entry (main.swift). Converting `fuzzJSON` to a C pointer here, not in main.swift,
/// keeps its `@_cdecl` symbol in one object file, which debug (per-file) builds need.
func runFuzzer() -> Never { FuzzDriver.run(fuzzJSON) }

/// The strict JSON parser every sender's body goes through. Beyond not crashing: what it accepts is
/// valid UTF-8, nests no deeper than its bound, and its canonical text parses back to the same value
/// (so what Tollgate hashes is what it read); numbers keep their text and never trap when read.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzCheck.bytes(data, size)
    guard let value = JSONValue.parse(bytes) else { return 0 }
    FuzzCheck.require(String(validating: bytes, as: UTF8.self) != nil, "accepted invalid UTF-8")
    FuzzCheck.require(depth(value) <= JSONParser.maxDepth, "accepted nesting deeper than \(JSONParser.maxDepth)")
    let canonical = value.canonical
    guard let again = JSONValue.parse(Array(canonical.utf8)) else {
        FuzzCheck.require(false, "canonical text does not parse: \(canonical)")
        return 0
    }
    FuzzCheck.require(again == value, "canonical round trip changed the value: \(canonical)")
    FuzzCheck.require(again.canonical == canonical, "canonical text is not stable: \(canonical)")
    readScalars(value)
    return 0
}

private func depth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): 1 + (items.map(depth).max() ?? 0)
    case .object(let members): 1 + (members.values.map(depth).max() ?? 0)
    default: 0
    }
}

/// The typed reads senders use; a number's flags must agree with its text.
private func readScalars(_ value: JSONValue) {
    switch value {
    case .number(let number):
        let hasFraction = number.text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        FuzzCheck.require(number.isIntegral == !hasFraction, "isIntegral disagrees with \(number.text)")
        if let integer = value.int64 { FuzzCheck.require(String(integer) == number.text || number.text.hasPrefix("-0"), "int64 \(integer) is not \(number.text)") }
        FuzzCheck.require(value.double != nil, "a JSON number is not a Double: \(number.text)")
        _ = AppleDate(json: value)
    case .string(let text):
        _ = value.int64
        _ = Timestamp(rfc3339: text)
    case .array(let items): items.forEach(readScalars)
    case .object(let members): members.values.forEach(readScalars)
    default: break
    }
}
