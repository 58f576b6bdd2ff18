import Config
import Events
import FuzzSupport
import ProviderAPIs
@testable import Verifiers
@testable import Toolkit

/// The program's entry (main.swift). Converting `fuzzSenders` to a C pointer here, not in main.swift,
/// keeps its `@_cdecl` symbol in one object file, which debug (per-file) builds need.
func runFuzzer() -> Never { FuzzDriver.run(fuzzSenders) }

/// Each sender's decoding and normalization, from the first point no valid signature is needed
/// (Iaptic's shared password is configured here as `fuzz-secret`). The first byte picks the path,
/// the rest is the body or header. Every event that comes out must pass `FuzzEvents.check`.
/// Path 7 is Apple's whole `accept` with a configured root: body, JWS, payload, then the x5c chain
/// (OpenSSL parses the fuzzed certificates), which no fuzzed input can make verify.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSenders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzCheck.bytes(data, size)
    guard let selector = input.first else { return 0 }
    let body = Array(input.dropFirst())
    switch selector % 8 {
    case 0: iaptic(body)
    case 1: citcon(body, format: .upi)
    case 2: citcon(body, format: .legacy)
    case 3: alipayPlus(body)
    case 4: alipayPlusSignature(String(decoding: body, as: UTF8.self))
    case 5: apple(body)
    case 6: googleRTDN(body)
    default: appleSource(body)
    }
    return 0
}

private let at = Timestamp(millisecondsSince1970: 1_700_000_000_000)

private let iapticSource: IapticSource = {
    var settings = IapticSettings()
    settings.apps = [IapticSettings.App(name: "fuzz", secrets: ["fuzz-secret"])]
    return IapticSource(settings: settings)
}()

private let citconSource: CitconSource = {
    var settings = CitconSettings()
    settings.accounts = [CitconSettings.Account(name: "fuzz", secrets: ["upi-secret"], tokens: ["chop-token"])]
    return CitconSource(settings: settings)
}()

private func iaptic(_ body: [UInt8]) {
    let request = WebhookRequest(path: "/webhooks/iaptic", headers: HeaderFields([("Content-Type", "application/json")]),
                                 body: body, receivedAt: at)
    guard let delivery = try? iapticSource.accept(request) else { return }
    delivery.events.forEach(FuzzEvents.check)
}

/// The source up to its signature check, then the normalizer as if the signature matched.
private func citcon(_ body: [UInt8], format: CitconBody.Format) {
    let contentType = format == .upi ? "application/json" : "application/x-www-form-urlencoded"
    let request = WebhookRequest(path: "/webhooks/citcon/fuzz", headers: HeaderFields([("Content-Type", contentType)]),
                                 body: body, receivedAt: at)
    _ = try? citconSource.accept(request)
    guard let parsed = try? CitconBody.parse(body, format: format), let signature = try? CitconSignature(body: parsed) else { return }
    _ = signature.expected(secret: "upi-secret")
    guard let event = try? CitconNormalizer(account: "fuzz", body: parsed, signedNames: Set(signature.signedNames),
                                            receivedAt: at).event() else { return }
    FuzzEvents.check(event)
}

private func alipayPlus(_ body: [UInt8]) {
    guard let object = JSONValue.parse(body)?.object,
          let event = try? AlipayPlusNormalizer(clientId: "SANDBOX_FUZZ", body: object, receivedAt: at).event() else { return }
    FuzzEvents.check(event)
}

/// What the header parser accepts, Tollgate's own formatting gives back unchanged.
private func alipayPlusSignature(_ text: String) {
    guard let header = try? AlipayPlusSignatureHeader(text) else { return }
    let again = try? AlipayPlusSignatureHeader(AntomSignature.header(signature: header.signature, keyVersion: header.keyVersion))
    FuzzCheck.require(again?.signature == header.signature && again?.keyVersion == header.keyVersion, "formatted header reads differently")
}

/// A notification payload at the top level; `transaction` and `renewal` members stand in for the
/// nested JWSs' payloads, as `AppleSource` hands them to the normalizer.
private func apple(_ body: [UInt8]) {
    guard let json = JSONValue.parse(body), let fields = try? AppleFields(json, path: "payload"),
          let payload = try? NotificationPayload(fields) else { return }
    let transaction = json["transaction"].flatMap { try? TransactionPayload(AppleFields($0, path: "transaction")) }
    let renewal = json["renewal"].flatMap { try? RenewalInfoPayload(AppleFields($0, path: "renewal")) }
    let event = AppleNormalizer(payload: payload, transaction: transaction, renewal: renewal, bundleId: "com.example.fuzz",
                                environment: payload.data?.environment ?? .sandbox,
                                notificationUUID: payload.notificationUUID ?? "fuzz", receivedAt: at).event()
    FuzzEvents.check(event)
}

/// A self-signed root (P-256, as Apple's) so the chain verifier exists; built once per process.
private let appleSourceWithRoot: AppleSource = {
    guard let key = PrivateKey.generateP256() else { fatalError("no P-256 key") }
    var builder = CertificateBuilder(subject: "Fuzz Root CA", notBefore: 1_577_836_800, notAfter: 2_208_988_800)
    builder.isCA = true
    guard let root = builder.issue(key: key, issuer: nil, issuerKey: key) else { fatalError("no root certificate") }
    return AppleSource(apps: [AppleSettings.App(bundleId: "com.example.app", appAppleId: 1234567890, environments: ["Sandbox", "Production"])],
                       roots: [root])
}()

private func appleSource(_ body: [UInt8]) {
    let request = WebhookRequest(path: "/webhooks/apple", headers: HeaderFields([("Content-Type", "application/json")]),
                                 body: body, receivedAt: at)
    let source = appleSourceWithRoot
    let events = FuzzAsync.wait { () async -> [NormalizedEvent] in
        (try? await source.handle(request))?.events ?? []
    }
    events.forEach(FuzzEvents.check)
}

private func googleRTDN(_ data: [UInt8]) {
    guard let notification = try? DeveloperNotification(data: data) else { return }
    FuzzEvents.check(GoogleNormalizer(notification: notification, messageId: "fuzz-1", subscription: "projects/p/subscriptions/fuzz", receivedAt: at).event())
}
