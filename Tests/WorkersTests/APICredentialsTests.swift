import Config
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Rejections
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// How every merchant API authenticates (docs/security.md): credentials, their rates, and the user
/// tokens a client credential acts with.
@Suite("Merchant API credentials")
struct APICredentialsTests {
    static let key = PrivateKey.generateP256()!
    static let app = "com.example.app"

    static func request(bearer: String?, userToken: String? = nil) -> Request {
        var head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/users/u/entitlements")
        if let bearer { head.headerFields[.authorization] = "Bearer \(bearer)" }
        if let userToken { head.headerFields[APICredentials.userTokenHeader] = userToken }
        return Request(head: head, body: RequestBody(buffer: ByteBuffer()))
    }

    static func credentials(burst: Int = 40) -> APICredentials {
        APICredentials(tokens: [APIToken("server-credential-0001"), APIToken("client-credential-0001", kind: .client, apps: [app]),
                                APIToken("server-credential-0002", rateBurst: 5)],
                       userTokenKeys: [app: key.publicKey!], ratePerSecond: 1, rateBurst: burst)
    }

    /// A compact JWS over `header` and `claims` as given, signed ES256 with `key`.
    static func jws(header: String = #"{"alg":"ES256","typ":"JWT"}"#, claims: String, key: PrivateKey = key) -> String {
        let input = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(claims.utf8))
        return input + "." + Base64.encodeURL(key.signES256(Array(input.utf8)) ?? [])
    }

    /// The reason code `check` refuses with; nil when it passes.
    static func reason(_ check: () throws(Rejection) -> Void) -> String? {
        do { try check() } catch { return error.code }
        return nil
    }

    @Test("an operator credential opens the console only: every merchant API refuses it 401, as an unknown one")
    func operatorCredentialIsNoMerchantCredential() {
        let credentials = APICredentials(tokens: [APIToken("operator-credential-0123456789-alice", kind: .operator, name: "alice", actions: true),
                                                  APIToken("server-credential-0001")])
        guard case .failure(let refused) = credentials.authenticate(Self.request(bearer: "operator-credential-0123456789-alice")) else {
            Issue.record("an operator credential was admitted to a merchant API")
            return
        }
        #expect(refused.code == "unauthorized" && refused.httpStatus == 401)
        #expect((try? credentials.authenticate(Self.request(bearer: "server-credential-0001")).get()) != nil)
    }

    @Test("each credential has its own rate: past its burst 429 with Retry-After; another credential is not held back")
    func ratePerCredential() throws {
        let credentials = Self.credentials(burst: 2)
        for _ in 0..<2 { #expect((try? credentials.authenticate(Self.request(bearer: "server-credential-0001")).get()) != nil) }
        guard case .failure(let refused) = credentials.authenticate(Self.request(bearer: "server-credential-0001")) else {
            Issue.record("the third request within a second was admitted")
            return
        }
        #expect(refused.reason == .rateLimited)
        #expect(refused.reason.httpStatus == 429)
        #expect(refused.headers[.retryAfter].flatMap(Int.init).map { $0 >= 1 } == true)
        // Another credential has its own bucket, here with a burst of its own.
        for _ in 0..<5 { #expect((try? credentials.authenticate(Self.request(bearer: "server-credential-0002")).get()) != nil) }
        #expect((try? credentials.authenticate(Self.request(bearer: "server-credential-0002")).get()) == nil)
        guard case .failure(let unknown) = credentials.authenticate(Self.request(bearer: "nobody-credential")) else {
            Issue.record("an unknown credential was admitted")
            return
        }
        #expect(unknown.reason == .unauthorized && unknown.headers[.wwwAuthenticate] == "Bearer")
    }

    @Test("a client credential acts for the user token's user only; alg, signature, aud, exp and lifetime are enforced")
    func userTokens() throws {
        let credentials = Self.credentials()
        let now = Timestamp.now.millisecondsSince1970 / 1000
        func check(_ token: String?, user: String = "alice") -> String? {
            let caller = try? credentials.authenticate(Self.request(bearer: "client-credential-0001", userToken: token)).get()
            guard let caller else { return "unauthenticated" }
            return Self.reason { () throws(Rejection) in try credentials.authorize(caller, app: Self.app, user: user) }
        }
        let valid = #"{"sub":"alice","aud":"\#(Self.app)","iat":\#(now),"exp":\#(now + 600)}"#
        #expect(check(Self.jws(claims: valid)) == nil)
        #expect(check(Self.jws(claims: #"{"sub":"alice","aud":["other","\#(Self.app)"],"iat":\#(now),"exp":\#(now + 600)}"#)) == nil)
        #expect(check(nil) == "user_token_required")
        #expect(check(Self.jws(claims: valid), user: "bob") == "user_not_allowed")
        #expect(check(Self.jws(claims: valid, key: PrivateKey.generateP256()!)) == "invalid_user_token")
        #expect(check(Self.jws(header: #"{"alg":"none"}"#, claims: valid)) == "invalid_user_token")
        #expect(check(Self.jws(header: #"{"alg":"ES256","crit":["x"]}"#, claims: valid)) == "invalid_user_token")
        // HMAC keyed with the public key's PEM (the algorithm-confusion forgery), and RSA: neither is ES256.
        let hmacInput = Base64.encodeURL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + Base64.encodeURL(Array(valid.utf8))
        let hmac = hmacInput + "." + Base64.encodeURL(Digest.hmacSHA256(key: Array((Self.key.publicKeyPEM ?? "").utf8), message: Array(hmacInput.utf8)))
        #expect(check(hmac) == "invalid_user_token")
        let rsa = try #require(PrivateKey.generateRSA())
        let rsaInput = Base64.encodeURL(Array(#"{"alg":"RS256","typ":"JWT"}"#.utf8)) + "." + Base64.encodeURL(Array(valid.utf8))
        #expect(check(rsaInput + "." + Base64.encodeURL(rsa.signRSASHA256(Array(rsaInput.utf8)) ?? [])) == "invalid_user_token")
        #expect(check(Self.jws(claims: #"{"sub":"alice","aud":"other.app","iat":\#(now),"exp":\#(now + 600)}"#)) == "invalid_user_token")
        #expect(check(Self.jws(claims: #"{"sub":"alice","aud":"\#(Self.app)","iat":\#(now - 700),"exp":\#(now - 100)}"#)) == "user_token_expired")
        #expect(check(Self.jws(claims: #"{"sub":"alice","aud":"\#(Self.app)","iat":\#(now),"exp":\#(now + 7_200)}"#)) == "invalid_user_token")
        #expect(check(Self.jws(claims: #"{"sub":"alice","aud":"\#(Self.app)","iat":\#(now + 600),"exp":\#(now + 1_200)}"#)) == "invalid_user_token")
        #expect(check("not.a.token") == "invalid_user_token")
        // Canonically equivalent is not the same user: "jose" + U+0301 is not "jos\u{E9}" to the store.
        let decomposed = #"{"sub":"jose\#u{301}","aud":"\#(Self.app)","iat":\#(now),"exp":\#(now + 600)}"#
        #expect(check(Self.jws(claims: decomposed), user: "jos\u{E9}") == "user_not_allowed")
        #expect(check(Self.jws(claims: decomposed), user: "jose\u{301}") == nil)
        // Two user tokens (one for each hop to read) are refused, not ignored.
        var head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/")
        head.headerFields[.authorization] = "Bearer client-credential-0001"
        head.headerFields.append(HTTPField(name: APICredentials.userTokenHeader, value: Self.jws(claims: valid)))
        head.headerFields.append(HTTPField(name: APICredentials.userTokenHeader, value: "x"))
        guard case .failure(let twice) = credentials.authenticate(Request(head: head, body: RequestBody(buffer: ByteBuffer()))) else {
            Issue.record("two user tokens were accepted")
            return
        }
        #expect(twice.reason == .invalidUserToken)
        // A server credential needs no user token; a client credential cannot reach another app.
        let server = try credentials.authenticate(Self.request(bearer: "server-credential-0001")).get()
        #expect(Self.reason { () throws(Rejection) in try credentials.authorize(server, app: Self.app, user: "anyone") } == nil)
        let client = try credentials.authenticate(Self.request(bearer: "client-credential-0001", userToken: Self.jws(claims: valid))).get()
        #expect(Self.reason { () throws(Rejection) in try credentials.authorize(client, app: "com.example.other", user: "alice") } == "app_not_allowed")
    }

    @Test("a client credential's requests that call a store's API have a bucket of their own; a server credential's have none")
    func storeCallsPerClient() throws {
        let credentials = APICredentials(tokens: [APIToken("server-credential-0001"), APIToken("client-credential-0001", kind: .client, apps: [Self.app])],
                                         userTokenKeys: [Self.app: Self.key.publicKey!], clientStoreCallsPerSecond: 1, clientStoreCallBurst: 2)
        let client = try credentials.authenticate(Self.request(bearer: "client-credential-0001")).get()
        #expect(Self.reason { () throws(Rejection) in try credentials.takeStoreCall(client) } == nil)
        #expect(Self.reason { () throws(Rejection) in try credentials.takeStoreCall(client) } == nil)
        let refused = #expect(throws: Rejection.self) { try credentials.takeStoreCall(client) }
        #expect(refused?.reason == .rateLimited && refused?.headers[.retryAfter] != nil)
        let server = try credentials.authenticate(Self.request(bearer: "server-credential-0001")).get()
        for _ in 0..<10 { #expect(Self.reason { () throws(Rejection) in try credentials.takeStoreCall(server) } == nil) }
        // A signed transaction is checked offline: it takes nothing from the bucket.
        #expect(!PurchaseClaim.appleSignedTransaction("a.b.c").callsStore)
        #expect(PurchaseClaim.google(packageName: "p", productId: "x", purchaseToken: "t").callsStore)
    }
}
