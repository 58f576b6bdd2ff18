import Config
import Entitlements
import Foundation
import Rejections
import Testing
@testable import Console

/// The console's sign-in and sessions (docs/console.md): what a cookie must be to admit an operator.
@Suite("Operator console sessions")
struct OperatorSessionTests {
    static let operators = [APIToken("operator-credential-0123456789-alice", kind: .operator, name: "alice", actions: true),
                            APIToken("operator-credential-0123456789-bob00", kind: .operator, name: "bob"),
                            APIToken("server-credential-0123456789-00000")]
    static let key = Array("a-key-the-store-keeps-for-sessions".utf8)

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var ms: Int64 = 1_800_000_000_000
        var now: Int64 { lock.lock(); defer { lock.unlock() }; return ms }
        func advance(_ delta: Int64) { lock.lock(); ms += delta; lock.unlock() }
    }

    static func sessions(_ operators: [APIToken] = operators, clock: Clock = Clock(), key: [UInt8] = key) -> OperatorSessions {
        OperatorSessions(operators: operators, key: key, lifetimeMinutes: 60, cookiePath: "/console", now: { clock.now })
    }

    static func reason(_ check: () throws -> Void) -> String? {
        do { try check() } catch { return (error as? Rejection)?.code ?? "\(error)" }
        return nil
    }

    @Test("a sign-in's cookie names its operator until it ends; read-only unless the credential acts")
    func roundTrip() throws {
        let clock = Clock()
        let sessions = Self.sessions(clock: clock)
        let (alice, cookie) = try sessions.signIn(credential: "operator-credential-0123456789-alice")
        #expect(alice.name == "alice" && alice.canAct)
        #expect(try sessions.session(cookie) == alice)
        let (bob, bobCookie) = try sessions.signIn(credential: "operator-credential-0123456789-bob00")
        #expect(try !bob.canAct && sessions.session(bobCookie).name == "bob")
        #expect(alice.csrfToken != bob.csrfToken)
        clock.advance(60 * 60_000 - 1)
        #expect((try? sessions.session(cookie)) != nil)
        clock.advance(1)
        #expect(Self.reason { _ = try sessions.session(cookie) } == "session_expired")
    }

    @Test("the credentials that are not operators', and wrong ones, sign nobody in")
    func wrongCredentials() {
        let sessions = Self.sessions()
        for credential in ["server-credential-0123456789-00000", "operator-credential-0123456789-alicf", "", String(repeating: "a", count: 5_000)] {
            #expect(Self.reason { _ = try sessions.signIn(credential: credential) } == "invalid_credential")
        }
    }

    @Test("a cookie changed in any field, signed with another key, or whose credential is gone, admits no one")
    func forgedCookies() throws {
        let sessions = Self.sessions()
        let (_, cookie) = try sessions.signIn(credential: "operator-credential-0123456789-bob00")
        var parts = cookie.split(separator: ".").map(String.init)
        parts[1] = "YWxpY2U"  // "alice": bob's session renamed
        let renamed = parts.joined(separator: ".")
        parts = cookie.split(separator: ".").map(String.init)
        parts[2] = String(Int64(parts[2])! + 86_400_000)
        let extended = parts.joined(separator: ".")
        for forged in [renamed, extended, cookie + "x", "v2" + cookie.dropFirst(2), "", "v1....", String(repeating: "v1.", count: 300)] {
            #expect(Self.reason { _ = try sessions.session(forged) } == "sign_in_required", "\(forged.prefix(40))")
        }
        let otherKey = Self.sessions(key: Array("another key".utf8))
        #expect(Self.reason { _ = try otherKey.session(cookie) } == "sign_in_required")
        // The credential taken out of api.tokens (or given a new token) ends its sessions.
        let rotated = Self.sessions([APIToken("operator-credential-9876543210-bob00", kind: .operator, name: "bob")])
        #expect(Self.reason { _ = try rotated.session(cookie) } == "sign_in_required")
    }

    @Test("a form passes only with its own session's CSRF token")
    func csrf() throws {
        let sessions = Self.sessions()
        let (alice, _) = try sessions.signIn(credential: "operator-credential-0123456789-alice")
        let (again, _) = try sessions.signIn(credential: "operator-credential-0123456789-alice")
        #expect(Self.reason { try OperatorSessions.checkCSRF(alice.csrfToken, for: alice) } == nil)
        for posted in [nil, "", again.csrfToken, alice.csrfToken + "A"] {
            #expect(Self.reason { try OperatorSessions.checkCSRF(posted, for: alice) } == "csrf_token_invalid")
        }
    }

    @Test("the cookie is HttpOnly, Secure, SameSite=Strict, scoped to the console and ends with the session")
    func cookieAttributes() {
        let sessions = Self.sessions()
        let set = sessions.setCookie("value")
        for attribute in ["Path=/console", "Max-Age=3600", "HttpOnly", "Secure", "SameSite=Strict"] {
            #expect(set.contains("; \(attribute)"), "\(attribute)")
        }
        #expect(sessions.clearCookie().contains("Max-Age=0"))
    }

    @Test("failed sign-ins past 30 at once are refused 429 with Retry-After; an operator's own credential still signs in")
    func signInFlood() {
        let sessions = Self.sessions()
        var reasons: [String] = []
        for _ in 0..<40 {
            reasons.append(Self.reason { _ = try sessions.signIn(credential: "guess-0123456789-0123456789-012345") } ?? "signed in")
        }
        #expect(reasons.prefix(30).allSatisfy { $0 == "invalid_credential" })
        #expect(reasons.suffix(10).allSatisfy { $0 == "too_many_sign_ins" })
        do {
            _ = try sessions.signIn(credential: "guess-0123456789-0123456789-012345")
        } catch {
            #expect(error.retryAfterSeconds.map { $0 >= 1 } == true)
        }
        // A customer flooding the page cannot lock the operators out.
        #expect(Self.reason { _ = try sessions.signIn(credential: "operator-credential-0123456789-alice") } == nil)
    }

    @Test("a Google event's purchase token, token-bearing id and refund token never reach a page; an Apple event is shown as it is")
    func redaction() throws {
        let ids = PurchaseIds(key: Array("k".utf8))
        let google = #"{"id":"google:voided:TOKEN-abc","source":"/google/com.example","app":"com.example","environment":"production","subject":"TOKEN-abc","type":"purchase.refunded","refundReview":{"pendingRefundToken":"REFUND-xyz","respondBy":"2030-01-01T00:00:00Z"}}"#
        let shown = EventRedaction.prettyEvent(google, ids: ids)
        #expect(!shown.contains("TOKEN-abc") && !shown.contains("REFUND-xyz"))
        #expect(shown.contains(ids.id(source: "google", app: "com.example", environment: "production", subject: "TOKEN-abc")))
        #expect(shown.contains(ids.eventId("google:voided:TOKEN-abc")))
        #expect(EventRedaction.eventId("google:voided:TOKEN-abc", source: "/google/com.example", ids: ids).hasPrefix("evt_"))
        #expect(EventRedaction.eventId("google:voided:TOKEN-abc", source: "google", ids: ids) == ids.eventId("google:voided:TOKEN-abc"))
        let apple = #"{"id":"apple:1","source":"/apple/com.example","subject":"apple:1000"}"#
        #expect(EventRedaction.prettyEvent(apple, ids: ids).contains("apple:1000"))
        #expect(EventRedaction.eventId("apple:1", source: "/apple/com.example", ids: ids) == "apple:1")
        #expect(!EventRedaction.prettyEvent("not json from /google/x TOKEN-abc", ids: ids).contains("TOKEN-abc"))
    }

    @Test("no template prints a value unescaped: every value goes through {{...}}")
    func templatesEscape() {
        for (name, text) in Templates.all {
            #expect(!text.contains("{{{") && !text.contains("{{&"), "\(name)")
        }
    }
}
