import Config
import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// The push's `Authorization: Bearer` OIDC token: each check refuses with its own reason code (401).
@Suite("Google: push authentication (OIDC token)")
struct GoogleAuthenticationTests {
    static let body = GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.subscription(4)))

    @Test("a token signed by a key of the set, with Google's claims, is accepted; both issuer spellings; key rotation")
    func valid() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: f.token())) == nil)
        let bare = f.token(claims: GoogleFixtures.claims(iss: "accounts.google.com"))
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: bare)) == nil)
        let rotated = f.token(header: GoogleFixtures.header(kid: "key-2"), key: f.rotated)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: rotated)) == nil)
        // The scheme is case-insensitive.
        var request = GoogleFixtures.request(Self.body, token: nil)
        request.headers.append(name: "authorization", value: "bearer \(f.token())")
        #expect(await source.reason(request) == nil)
    }

    @Test("missing, non-Bearer, empty and non-JWT Authorization headers")
    func missingOrMalformed() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: nil)) == .missingAuthorization)
        var basic = GoogleFixtures.request(Self.body, token: nil)
        basic.headers.append(name: "Authorization", value: "Basic dXNlcjpwYXNz")
        #expect(await source.reason(basic) == .missingAuthorization)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: "not-a-jwt")) == .malformedToken)
        let twoParts = GoogleFixtures.segment(GoogleFixtures.header()) + ".e30"
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: twoParts)) == .malformedToken)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: twoParts + ".!!")) == .malformedToken)
        let huge = String(repeating: "a", count: 20_000)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: huge)) == .malformedToken)
        #expect(WebhookReason.missingAuthorization.httpStatus == 401)
        #expect(WebhookReason.malformedToken.httpStatus == 401)
    }

    @Test("every claim check has its reason: iss, aud, email, email_verified, iat/exp, expired, not yet valid")
    func claims() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let now = GoogleFixtures.nowSeconds
        let cases: [(String, WebhookReason)] = [
            (GoogleFixtures.claims(iss: "https://evil.example.com"), .wrongIssuer),
            (GoogleFixtures.claims(iss: "accounts.google.com.evil"), .wrongIssuer),
            (GoogleFixtures.claims(aud: "https://other.example.com/push"), .wrongAudience),
            (GoogleFixtures.claims(aud: GoogleFixtures.audience + "/"), .wrongAudience),
            (GoogleFixtures.claims(email: "someone-else@my-project.iam.gserviceaccount.com"), .wrongEmail),
            (GoogleFixtures.claims(emailVerified: "false"), .emailNotVerified),
            (GoogleFixtures.claims(emailVerified: #""true""#), .emailNotVerified),
            (GoogleFixtures.claims(iat: nil), .invalidTokenTime),
            (GoogleFixtures.claims(exp: nil), .invalidTokenTime),
            (GoogleFixtures.claims(iat: now, exp: now), .invalidTokenTime),
            // Expired: past exp by more than the 60 s of allowed skew.
            (GoogleFixtures.claims(iat: now - 3_700, exp: now - 61), .tokenExpired),
            // Issued in the future by more than the skew.
            (GoogleFixtures.claims(iat: now + 61, exp: now + 3_661), .tokenNotYetValid),
            (GoogleFixtures.claims(extra: [#""nbf":\#(now + 120)"#]), .tokenNotYetValid),
        ]
        for (claims, expected) in cases {
            let rejection = await source.rejection(GoogleFixtures.request(Self.body, token: f.token(claims: claims)))
            #expect(rejection?.reason == expected, "\(claims)")
            #expect(rejection?.reason.httpStatus == 401)
        }
        // Within the skew both ways is accepted.
        let skewed = [GoogleFixtures.claims(iat: now - 3_600, exp: now - 59), GoogleFixtures.claims(iat: now + 59, exp: now + 3_659)]
        for claims in skewed {
            #expect(await source.reason(GoogleFixtures.request(Self.body, token: f.token(claims: claims))) == nil, "\(claims)")
        }
    }

    @Test("the token time is the request's now, so tollgate verify --at can check an old capture")
    func requestNow() async throws {
        let f = await GoogleFixtures.shared()
        let token = f.token()
        let later = Timestamp(millisecondsSince1970: GoogleFixtures.now.millisecondsSince1970 + 7_200_000)
        #expect(await f.source().reason(GoogleFixtures.request(Self.body, token: token, now: later)) == .tokenExpired)
        #expect(await f.source().reason(GoogleFixtures.request(Self.body, token: token)) == nil)
    }

    @Test("alg confusion: none, HS256 keyed with the public key, RS512, and a missing alg are refused")
    func algorithms() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let claims = GoogleFixtures.segment(GoogleFixtures.claims())

        let none = GoogleFixtures.segment(GoogleFixtures.header(alg: "none")) + "." + claims + "."
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: none)) == .unsupportedAlg)

        // HS256 with the RSA public key (as PEM, the usual form of the attack) as the HMAC secret.
        let hsInput = GoogleFixtures.segment(GoogleFixtures.header(alg: "HS256")) + "." + claims
        let secret = Array((f.signing.publicKeyPEM ?? "").utf8)
        let mac = Self.hmacSHA256(key: secret, message: Array(hsInput.utf8))
        let hs256 = hsInput + "." + Base64.encodeURL(mac)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: hs256)) == .unsupportedAlg)

        let rs512 = f.token(header: GoogleFixtures.header(alg: "RS512"))
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: rs512)) == .unsupportedAlg)
        let noAlg = f.token(header: #"{"kid":"key-1","typ":"JWT"}"#)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: noAlg)) == .unsupportedAlg)
        let crit = f.token(header: #"{"alg":"RS256","kid":"key-1","crit":["exp"]}"#)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: crit)) == .malformedToken)
    }

    @Test("unknown or missing kid, a key outside the set, and a tampered payload or signature")
    func keysAndSignatures() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let unknown = f.token(header: GoogleFixtures.header(kid: "key-9"), key: f.stranger)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: unknown)) == .unknownKeyId)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: f.token(header: GoogleFixtures.header(kid: nil)))) == .unknownKeyId)
        // A stranger's key claiming a published kid.
        let forged = f.token(key: f.stranger)
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: forged)) == .badSignature)

        // Tampered payload: same header and signature, claims for another audience.
        let genuine = f.token().split(separator: ".").map(String.init)
        let tamperedClaims = GoogleFixtures.segment(GoogleFixtures.claims(aud: "https://attacker.example.com"))
        let tampered = [genuine[0], tamperedClaims, genuine[2]].joined(separator: ".")
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: tampered)) == .badSignature)
        var signature = Base64.decodeURL(genuine[2][...]) ?? []
        signature[signature.count / 2] ^= 0x01
        let flipped = [genuine[0], genuine[1], Base64.encodeURL(signature)].joined(separator: ".")
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: flipped)) == .badSignature)
        #expect(WebhookReason.unknownKeyId.httpStatus == 401)
    }

    @Test("authentication comes before the envelope: an unauthenticated malformed body is 401, not 400")
    func authenticityFirst() async throws {
        let f = await GoogleFixtures.shared()
        #expect(await f.source().reason(GoogleFixtures.request("not json", token: nil)) == .missingAuthorization)
        #expect(await f.source().reason(GoogleFixtures.request("not json", token: f.token())) == .malformedJSON)
    }

    @Test("rejection messages never contain the token")
    func tokenNotInMessages() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let tokens = [f.token(claims: GoogleFixtures.claims(aud: "x")), f.token(key: f.stranger),
                      f.token(header: GoogleFixtures.header(kid: "key-9")), f.token(header: GoogleFixtures.header(alg: "HS256"))]
        for token in tokens {
            let rejection = await source.rejection(GoogleFixtures.request(Self.body, token: token))
            let message = rejection?.message ?? ""
            #expect(rejection != nil)
            for part in token.split(separator: ".") where part.count > 8 {
                #expect(!message.contains(part), "\(message)")
            }
        }
    }

    @Test("an unconfigured Google source refuses every push without fetching keys")
    func unconfigured() async throws {
        let f = await GoogleFixtures.shared()
        let source = try GoogleSource(settings: GoogleSettings())
        #expect(await source.reason(GoogleFixtures.request(Self.body, token: f.token())) == .wrongAudience)
        #expect(await source.readinessProblem(now: GoogleFixtures.now) == nil)
    }

    /// HMAC-SHA256 (RFC 2104), as an attacker would compute it.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? Digest.sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = Digest.sha256(block.map { $0 ^ 0x36 } + message)
        return Digest.sha256(block.map { $0 ^ 0x5c } + inner)
    }
}
