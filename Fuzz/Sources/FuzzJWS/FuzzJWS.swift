import FuzzSupport
@testable import Verifiers
@testable import Toolkit

/// The program's entry (main.swift). Converting `fuzzJWS` to a C pointer here, not in main.swift,
/// keeps its `@_cdecl` symbol in one object file, which debug (per-file) builds need.
func runFuzzer() -> Never { FuzzDriver.run(fuzzJWS) }

/// The compact JWS parser (Apple's signedPayload and nested JWSs, Google's OIDC token) and the
/// strict base64 under it. Beyond not crashing: an accepted JWS is exactly three non-empty segments
/// whose signing input and header are the bytes received, and strict base64 has one spelling per
/// value, so decoding then encoding gives back the input. The payload goes on through Apple's models
/// as `AppleSource` reads it before the chain is checked (the chain itself is OpenSSL's, not fuzzed here).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzCheck.bytes(data, size)
    checkBase64(bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    guard let jws = try? CompactJWS(text) else { return 0 }
    let received = Array(text.utf8)
    let segments = received.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    FuzzCheck.require(segments.count == 3 && segments.allSatisfy { !$0.isEmpty }, "accepted \(segments.count) segments")
    FuzzCheck.require(Array(jws.headerSegment) == Array(segments[0]), "header segment is not the received bytes")
    FuzzCheck.require(Array(jws.signingInput) == Array(segments[0]) + [UInt8(ascii: ".")] + Array(segments[1]),
                      "signing input is not header.payload as received")
    FuzzCheck.require(Array(Base64.encodeURL(jws.payload).utf8) == Array(segments[1]), "payload has two spellings")
    FuzzCheck.require(Array(Base64.encodeURL(jws.signature).utf8) == Array(segments[2]), "signature has two spellings")
    if let header = try? jws.header() { FuzzCheck.require(header.object != nil, "header() returned a non-object") }
    decodeApplePayloads(jws.payload)
    return 0
}

private func checkBase64(_ bytes: [UInt8]) {
    if let decoded = Base64.decodeURL(bytes[...]) {
        FuzzCheck.require(Array(Base64.encodeURL(decoded).utf8) == bytes, "base64url accepted a non-canonical spelling")
    }
    if let decoded = Base64.decodeStandard(bytes[...]) {
        FuzzCheck.require(Array(Base64.encodeStandard(decoded).utf8) == bytes, "base64 accepted a non-canonical spelling")
    }
}

/// What `AppleSource` decodes from a payload: the notification, or a nested transaction or renewal.
private func decodeApplePayloads(_ payload: [UInt8]) {
    guard let json = JSONValue.parse(payload), let fields = try? AppleFields(json, path: "payload") else { return }
    _ = try? NotificationPayload(fields)
    _ = try? TransactionPayload(fields)
    _ = try? RenewalInfoPayload(fields)
}
