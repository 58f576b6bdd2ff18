import Config
import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

@Suite("Apple: JWS and x5c verification")
struct AppleVerificationTests {
    @Test("a valid notification with nested transaction and renewal info is accepted and decoded")
    func valid() async throws {
        let chain = try AppleTestChain()
        let jws = try chain.sign(AppleBodies.notification(
            transactionJWS: try chain.sign(AppleBodies.transaction()), renewalJWS: try chain.sign(AppleBodies.renewal())))
        let delivery = try await chain.source().handle(AppleBodies.request(jws))
        let event = try #require(delivery.events.first)
        #expect(delivery.response == SenderResponse(status: 200))
        #expect(event.id == "apple:0b7a1b2c-3d4e-5f60-7182-93a4b5c6d7e8")
        #expect(event.type == .subscriptionRenewed)
        #expect(event.subject == "1000")
        #expect(event.user == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(event.price == NormalizedEvent.Price(amountMicros: 4_990_000, currency: "USD"))
        #expect(event.subscription?.autoRenew == true)
        #expect(event.subscription?.state == "active")
        #expect(event.occurredAt == "2023-11-14T22:13:20.000Z")
        #expect(event.environment == .sandbox)
        #expect(event.source == "/apple/com.example")
    }

    @Test("a chain shaped like Apple's test chain (no AKI/SKI) passes, unless strict X.509 checks are on")
    func appleShapedChain() async throws {
        var options = AppleTestChain.Options()
        options.keyIdentifiers = false
        let chain = try AppleTestChain(options)
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification()))
        #expect(await chain.source().reason(request) == nil)
        #expect(await chain.source(strict: true).reason(request) == .untrustedChain)
    }

    @Test("x5c[2] is not trusted: a look-alike root in it still verifies to the configured root")
    func lookalikeRoot() async throws {
        let chain = try AppleTestChain()
        let x5c = [chain.x5c[0], chain.x5c[1], Base64.encodeStandard(try chain.lookalikeRoot().der)]
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), x5c: x5c))) == nil)
    }

    @Test("a chain to another root is untrusted, even when it offers that root in x5c[2]")
    func wrongRoot() async throws {
        let chain = try AppleTestChain()
        let other = try AppleTestChain()
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification()))
        #expect(await chain.source(roots: [other.root]).reason(request) == .untrustedChain)
        #expect(await chain.source(roots: []).reason(request) == .untrustedChain)
    }

    @Test("validity is judged at signedDate: a leaf expired now but valid then passes; one not valid then fails")
    func validityAtSignedDate() async throws {
        let signed = AppleBodies.signedDate / 1000
        var expiredSince = AppleTestChain.Options()
        expiredSince.leafValidity = (signed - 86_400)...(signed + 86_400)
        let old = try AppleTestChain(expiredSince)
        #expect(await old.source().reason(AppleBodies.request(try old.sign(AppleBodies.notification()))) == nil)

        var notYet = AppleTestChain.Options()
        notYet.leafValidity = (signed + 60)...(signed + 86_400)
        let future = try AppleTestChain(notYet)
        #expect(await future.source().reason(AppleBodies.request(try future.sign(AppleBodies.notification()))) == .certificateExpired)

        var expiredThen = AppleTestChain.Options()
        expiredThen.leafValidity = (signed - 86_400)...(signed - 60)
        let expired = try AppleTestChain(expiredThen)
        #expect(await expired.source().reason(AppleBodies.request(try expired.sign(AppleBodies.notification()))) == .certificateExpired)
    }

    @Test("without signedDate the chain is checked at now")
    func noSignedDateUsesNow() async throws {
        let signed = AppleBodies.signedDate / 1000
        var options = AppleTestChain.Options()
        options.leafValidity = (signed - 86_400)...(signed + 86_400)
        let chain = try AppleTestChain(options)
        let jws = try chain.sign(AppleBodies.notification(signedDate: nil))
        #expect(await chain.source().reason(AppleBodies.request(jws)) == .certificateExpired)
        let thenRequest = AppleBodies.request(jws, now: Timestamp(millisecondsSince1970: AppleBodies.signedDate))
        #expect(await chain.source().reason(thenRequest) == nil)
    }

    @Test("Apple's marker OIDs are required on leaf and intermediate")
    func markerOIDs() async throws {
        var noLeafOID = AppleTestChain.Options()
        noLeafOID.leafOID = "1.2.840.113635.100.6.11.2"
        let a = try AppleTestChain(noLeafOID)
        #expect(await a.source().reason(AppleBodies.request(try a.sign(AppleBodies.notification()))) == .missingAppleOID)

        var noIntermediateOID = AppleTestChain.Options()
        noIntermediateOID.intermediateOID = "1.2.840.113635.100.6.2.2"
        let b = try AppleTestChain(noIntermediateOID)
        #expect(await b.source().reason(AppleBodies.request(try b.sign(AppleBodies.notification()))) == .missingAppleOID)
    }

    @Test("only ES256 is accepted", arguments: ["none", "HS256", "RS256", "ES384", "es256"])
    func algorithms(alg: String) async throws {
        let chain = try AppleTestChain()
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification(), alg: alg))
        #expect(await chain.source().reason(request) == .unsupportedAlg)
    }

    @Test("a missing alg is refused")
    func missingAlg() async throws {
        let chain = try AppleTestChain()
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), alg: nil))) == .unsupportedAlg)
    }

    @Test("HS256 keyed with the leaf's public key (alg confusion) is refused")
    func algConfusion() async throws {
        let chain = try AppleTestChain()
        let header = Base64.encodeURL(Array(#"{"alg":"HS256","x5c":["\#(chain.x5c[0])","\#(chain.x5c[1])","\#(chain.x5c[2])"]}"#.utf8))
        let payload = Base64.encodeURL(Array(AppleBodies.notification().utf8))
        let forged = "\(header).\(payload).\(Base64.encodeURL(Digest.sha256(chain.leaf.der)))"
        #expect(await chain.source().reason(AppleBodies.request(forged)) == .unsupportedAlg)
    }

    @Test("x5c must hold exactly three certificates", arguments: [2, 4])
    func chainLength(count: Int) async throws {
        let chain = try AppleTestChain()
        let x5c = count == 2 ? Array(chain.x5c.prefix(2)) : chain.x5c + [chain.x5c[2]]
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), x5c: x5c))) == .invalidChainLength)
    }

    @Test("x5c entries must be standard base64 DER certificates", arguments: ["abc", "not base64!", "YWJj", ""])
    func badCertificates(entry: String) async throws {
        let chain = try AppleTestChain()
        let x5c = [entry, chain.x5c[1], chain.x5c[2]]
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), x5c: x5c))) == .invalidCertificate)
        let urlSafe = [chain.x5c[0].replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"), chain.x5c[1], chain.x5c[2]]
        if urlSafe[0] != chain.x5c[0] {
            #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), x5c: urlSafe))) == .invalidCertificate)
        }
    }

    @Test("a tampered payload or signature fails the ES256 check")
    func tampered() async throws {
        let chain = try AppleTestChain()
        let jws = try chain.sign(AppleBodies.notification())
        let parts = jws.split(separator: ".").map(String.init)
        let otherPayload = Base64.encodeURL(Array(AppleBodies.notification(type: "REFUND").utf8))
        #expect(await chain.source().reason(AppleBodies.request("\(parts[0]).\(otherPayload).\(parts[2])")) == .badSignature)
        var signature = try #require(Base64.decodeURL(Substring(parts[2])))
        signature[10] ^= 0x01
        #expect(await chain.source().reason(AppleBodies.request("\(parts[0]).\(parts[1]).\(Base64.encodeURL(signature))")) == .badSignature)
        // Signed by a key that is not the leaf's.
        let foreign = try #require(PrivateKey.generateP256())
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), key: foreign))) == .badSignature)
    }

    @Test("a tampered nested JWS is refused; with verifyNested off it is only decoded")
    func tamperedNested() async throws {
        let chain = try AppleTestChain()
        let nested = try chain.sign(AppleBodies.transaction()).split(separator: ".").map(String.init)
        let forgedPayload = Base64.encodeURL(Array(AppleBodies.transaction().replacingOccurrences(of: "4990", with: "1").utf8))
        let forged = "\(nested[0]).\(forgedPayload).\(nested[2])"
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification(transactionJWS: forged)))
        #expect(await chain.source().reason(request) == .badSignature)
        #expect(await chain.source(verifyNested: false).reason(request) == nil)
    }

    @Test("JWS shape errors are malformed_jws", arguments: ["a.b", "a.b.c.d", "a..c", "!!.b.c", "e30.e30.e30=", "eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.AA"])
    func malformed(text: String) async throws {
        let chain = try AppleTestChain()
        #expect(await chain.source().reason(AppleBodies.request(text)) == .malformedJWS)
    }

    @Test("trailing garbage after a valid JWS is refused")
    func trailingGarbage() async throws {
        let chain = try AppleTestChain()
        let jws = try chain.sign(AppleBodies.notification())
        #expect(await chain.source().reason(AppleBodies.request(jws + ".x")) == .malformedJWS)
        #expect(await chain.source().reason(AppleBodies.request(jws + "=")) == .malformedJWS)
    }

    @Test("a V1 body is refused with instructions; other non-V2 bodies are 400")
    func v1() async throws {
        let chain = try AppleTestChain()
        let v1 = WebhookRequest(path: "/webhooks/apple", headers: HeaderFields(),
                                body: Array(#"{"notification_type":"DID_RENEW","password":"x","unified_receipt":{}}"#.utf8),
                                receivedAt: Timestamp(millisecondsSince1970: 0))
        do {
            _ = try await chain.source().handle(v1)
            Issue.record("V1 accepted")
        } catch {
            #expect(error.reason == .unsupportedVersion)
            #expect(error.reason.httpStatus == 400)
            #expect(error.message.contains("Version 2"))
        }
        let junk = WebhookRequest(path: "/", headers: HeaderFields(), body: Array("[]".utf8), receivedAt: Timestamp(millisecondsSince1970: 0))
        #expect(await chain.source().reason(junk) == .malformedJSON)
    }

    @Test("a verified chain is cached, and a cache hit still checks validity at the effective date")
    func chainCache() async throws {
        let signed = AppleBodies.signedDate / 1000
        var options = AppleTestChain.Options()
        options.leafValidity = (signed - 86_400)...(signed + 86_400)
        let chain = try AppleTestChain(options)
        let verifier = try #require(TrustStore(roots: [chain.root]).map { AppleChainVerifier(trustStore: $0) })
        let jws = try CompactJWS(try chain.sign(AppleBodies.transaction()))
        _ = try verifier.verifiedSigner(for: jws, at: signed)
        _ = try verifier.verifiedSigner(for: jws, at: signed + 10)
        #expect(verifier.cachedChains == 1)
        #expect(throws: Rejection.self) { _ = try verifier.verifiedSigner(for: jws, at: signed + 2 * 86_400) }
        // A chain checked without a signature (verify(x5c:)) is not remembered.
        let other = try AppleTestChain(options)
        let unsigned = try #require(TrustStore(roots: [other.root]).map { AppleChainVerifier(trustStore: $0) })
        _ = try unsigned.verify(x5c: .array(other.x5c.map(JSONValue.string)), at: signed)
        #expect(unsigned.cachedChains == 0)
    }

    @Test("the same certificates under another header are found by fingerprint, still checked for validity")
    func chainCacheByFingerprint() async throws {
        let signed = AppleBodies.signedDate / 1000
        var options = AppleTestChain.Options()
        options.leafValidity = (signed - 86_400)...(signed + 86_400)
        let chain = try AppleTestChain(options)
        let verifier = try #require(TrustStore(roots: [chain.root]).map { AppleChainVerifier(trustStore: $0) })
        let first = try CompactJWS(try chain.sign(AppleBodies.transaction()))
        let header = #"{"alg":"ES256","kid":"other","x5c":["\#(chain.x5c.joined(separator: "\",\""))"]}"#
        let second = try CompactJWS(try Self.signed(header: header, payload: "{}", key: chain.leafKey))
        #expect(first.headerSegment != second.headerSegment)
        _ = try verifier.verifiedSigner(for: first, at: signed)
        _ = try verifier.verifiedSigner(for: second, at: signed)
        #expect(verifier.cachedChains == 1)
        #expect(throws: Rejection.self) { _ = try verifier.verifiedSigner(for: second, at: signed + 2 * 86_400) }
    }

    @Test("a chain whose JWS signature fails is not cached, under its header or its certificates")
    func failedSignatureNotCached() async throws {
        let chain = try AppleTestChain()
        let verifier = try #require(TrustStore(roots: [chain.root]).map { AppleChainVerifier(trustStore: $0) })
        let valid = try chain.sign(AppleBodies.transaction())
        // Apple's public chain copied onto a forged payload: the chain verifies, the signature does not.
        let parts = valid.split(separator: ".")
        let forged = try CompactJWS(parts[0] + "." + Base64.encodeURL(Array(#"{"forged":true}"#.utf8)) + "." + parts[2])
        for _ in 0..<2 {
            do {
                _ = try verifier.verifiedSigner(for: forged, at: AppleBodies.signedDate / 1000)
                Issue.record("a forged signature was accepted")
            } catch {
                #expect(error.reason == .badSignature)
            }
        }
        #expect(verifier.cachedChains == 0)
        // Through the source as well: the forged delivery is refused and leaves nothing cached.
        let source = chain.source()
        #expect(await source.reason(AppleBodies.request(try chain.sign(AppleBodies.notification(), key: chain.intermediateKey))) == .badSignature)
        _ = try verifier.verifiedSigner(for: try CompactJWS(valid), at: AppleBodies.signedDate / 1000)
        #expect(verifier.cachedChains == 1)
    }

    @Test("two chains with the same intermediate and root (the same tail) get different cache keys and their own leaf")
    func sameTailChainsDoNotCollide() async throws {
        let chain = try AppleTestChain()
        var builder = CertificateBuilder(subject: "Test Leaf 2", notBefore: AppleTestChain.y2020, notAfter: AppleTestChain.y2040)
        builder.serial = 4
        builder.markerOIDs = [AppleChainVerifier.leafOID]
        let secondKey = try #require(PrivateKey.generateP256())
        let secondLeaf = try #require(builder.issue(key: secondKey, issuer: chain.intermediate, issuerKey: chain.intermediateKey))
        let firstDER = [chain.leaf, chain.intermediate, chain.root].flatMap(\.der)
        let secondDER = [secondLeaf, chain.intermediate, chain.root].flatMap(\.der)
        #expect(Array(firstDER.suffix(64)) == Array(secondDER.suffix(64)), "the tails are the same")
        let firstKey = ChainCache.Key(digestOf: firstDER), secondKeyOfCache = ChainCache.Key(digestOf: secondDER)
        #expect(firstKey != secondKeyOfCache)
        #expect(firstKey.hashValue != secondKeyOfCache.hashValue, "hashed on the whole chain, not its tail")

        let verifier = try #require(TrustStore(roots: [chain.root]).map { AppleChainVerifier(trustStore: $0) })
        let secondX5C = [secondLeaf, chain.intermediate, chain.root].map { Base64.encodeStandard($0.der) }
        let first = try verifier.verifiedSigner(for: try CompactJWS(try chain.sign(AppleBodies.transaction())), at: AppleBodies.signedDate / 1000)
        let second = try verifier.verifiedSigner(for: try CompactJWS(try chain.sign(AppleBodies.transaction(), x5c: secondX5C, key: secondKey)),
                                                 at: AppleBodies.signedDate / 1000)
        #expect(verifier.cachedChains == 2)
        #expect(first.leaf.der == chain.leaf.der && second.leaf.der == secondLeaf.der)
        // Each is found again with its own leaf; the other's signature does not pass under it.
        #expect(throws: Rejection.self) {
            _ = try verifier.verifiedSigner(for: try CompactJWS(try chain.sign(AppleBodies.transaction(), x5c: secondX5C)), at: AppleBodies.signedDate / 1000)
        }
    }

    static func signed(header: String, payload: String, key: PrivateKey) throws -> String {
        let input = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(payload.utf8))
        return input + "." + Base64.encodeURL(try #require(key.signES256(Array(input.utf8))))
    }
}

@Suite("Apple: app checks")
struct AppleAppCheckTests {
    @Test("the bundleId must be configured")
    func wrongBundle() async throws {
        let chain = try AppleTestChain()
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification(bundleId: "com.other")))
        #expect(await chain.source().reason(request) == .unknownApp)
        #expect(WebhookReason.unknownApp.httpStatus == 403)
    }

    @Test("Production requires the configured appAppleId")
    func productionAppAppleId() async throws {
        let chain = try AppleTestChain()
        let good = AppleBodies.request(try chain.sign(AppleBodies.notification(environment: "Production")))
        let wrong = AppleBodies.request(try chain.sign(AppleBodies.notification(environment: "Production", appAppleId: 1235)))
        let missing = AppleBodies.request(try chain.sign(AppleBodies.notification(environment: "Production", appAppleId: nil)))
        #expect(await chain.source().reason(good) == nil)
        #expect(await chain.source().reason(wrong) == .unknownApp)
        #expect(await chain.source().reason(missing) == .unknownApp)
    }

    @Test("a Sandbox TEST notification without appAppleId is valid")
    func sandboxTestWithoutAppId() async throws {
        let chain = try AppleTestChain()
        let jws = try chain.sign(AppleBodies.notification(type: "TEST", appAppleId: nil, status: nil))
        let event = try #require(try await chain.source().handle(AppleBodies.request(jws)).events.first)
        #expect(event.type == .storeTest)
    }

    @Test("the environment must be enabled for the app; Xcode and LocalTesting only when listed")
    func environments() async throws {
        let chain = try AppleTestChain()
        let sandboxOnly = [AppleSettings.App(bundleId: "com.example", appAppleId: 1234, environments: ["Sandbox"])]
        let production = AppleBodies.request(try chain.sign(AppleBodies.notification(environment: "Production")))
        let xcode = AppleBodies.request(try chain.sign(AppleBodies.notification(environment: "Xcode")))
        #expect(await chain.source(apps: sandboxOnly).reason(production) == .wrongEnvironment)
        #expect(await chain.source().reason(xcode) == .wrongEnvironment)
        let withXcode = [AppleSettings.App(bundleId: "com.example", appAppleId: 1234, environments: ["Sandbox", "Xcode"])]
        #expect(await chain.source(apps: withXcode).reason(xcode) == nil)
    }

    @Test("a nested transaction for another app or environment is refused")
    func nestedMismatch() async throws {
        let chain = try AppleTestChain()
        let otherBundle = try chain.sign(AppleBodies.transaction(bundleId: "com.other"))
        let otherEnvironment = try chain.sign(AppleBodies.transaction(environment: "Production"))
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(transactionJWS: otherBundle)))) == .unknownApp)
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(AppleBodies.notification(transactionJWS: otherEnvironment)))) == .wrongEnvironment)
    }
}
