import Config
import Console
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import ServiceHost
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Webhooks

/// The console's actions through its routes, as the workers serve them (docs/console.md): the operator
/// who acts, the read-only one, the CSRF token, the audit in the store and on `tollgate.audit`.
@Suite("Operator console actions")
struct ConsoleActionTests {
    static let alice = "operator-credential-0123456789-alice"
    static let bob = "operator-credential-0123456789-bob00"

    static func setup() throws -> ConsoleSetup {
        try #require(try ConsoleSetup.make(settings: ConsoleSettings(), operators: [
            APIToken(alice, kind: .operator, name: "alice", actions: true), APIToken(bob, kind: .operator, name: "bob"),
        ]))
    }

    static func webhooks() throws -> WebhookSetup {
        var settings = WebhookSettings()
        var endpoint = WebhookSettings.Endpoint(name: "crm", url: "https://crm.invalid/hooks")
        endpoint.secrets = ["whsec_" + Data(repeating: 7, count: 32).base64EncodedString()]
        settings.endpoints = [endpoint]
        return try WebhookSetup(settings: settings)
    }

    /// A browser's visit: the session cookie it holds, and each answer's status and body.
    struct Browser {
        let routes: RouteGroup
        var cookie: String?

        mutating func call(_ method: HTTPRequest.Method, _ path: String, form: [String: String]? = nil) async throws -> (status: Int, body: String, headers: HTTPFields) {
            var head = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path)
            if let cookie { head.headerFields[.cookie] = "\(OperatorSessions.cookieName)=\(cookie)" }
            var body = ByteBuffer()
            if let form {
                head.headerFields[.contentType] = "application/x-www-form-urlencoded"
                body = ByteBuffer(string: form.map { "\($0.key)=\(PercentEncoding.encode($0.value))" }.joined(separator: "&"))
            }
            let response = try await routes.respond(Request(head: head, body: RequestBody(buffer: body)))
            let collected = PurchaseCalls.CollectedBody()
            try await response.body.write(collected)
            if let set = response.headers[.setCookie], let value = set.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last {
                cookie = value.isEmpty ? nil : String(value)
            }
            return (response.status.code, String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self), response.headers)
        }

        mutating func signIn(_ credential: String) async throws {
            let answer = try await call(.post, "/console/sign-in", form: ["credential": credential])
            #expect(answer.status == 303 && cookie != nil)
        }

        /// The CSRF token the page's forms carry.
        mutating func csrf() async throws -> String {
            let page = try await call(.get, "/console").body
            return try #require(page.firstMatch(of: /name="csrf" value="([^"]+)"/).map { String($0.1) })
        }
    }

    @Test("an operator disables and enables an endpoint after its preview; a read-only one and a forged token are refused; every action is audited in the store and on tollgate.audit",
          arguments: Backend.allCases)
    func endpointActions(_ backend: Backend) async throws {
        try await WorkerHarness.with { harness in
            try await TestDatabases.withStore(backend) { store in
                try await harness.withWorkers(store: store, console: try Self.setup(), webhooks: try Self.webhooks()) { workers in
                    var anonymous = Browser(routes: workers.workers.routes)
                    #expect(try await anonymous.call(.get, "/console/endpoints").status == 303)
                    #expect(try await anonymous.call(.post, "/console/endpoints/crm/disable", form: ["csrf": "x"]).status == 401)

                    var bob = Browser(routes: workers.workers.routes)
                    try await bob.signIn(Self.bob)
                    let bobToken = try await bob.csrf()
                    let list = try await bob.call(.get, "/console/endpoints")
                    #expect(list.status == 200 && list.body.contains("crm") && list.body.contains("enabled") && !list.body.contains("Disable…"))
                    #expect(list.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
                    #expect(try await bob.call(.get, "/console/endpoints/crm/disable").status == 403)
                    let refused = try await bob.call(.post, "/console/endpoints/crm/disable", form: ["csrf": bobToken])
                    #expect(refused.status == 403 && refused.body.contains("action_not_allowed"))
                    // Refused before anything the post names is looked at: no answer tells which endpoints exist.
                    #expect(try await bob.call(.post, "/console/endpoints/nobody/disable", form: ["csrf": bobToken]).status == 403)
                    #expect(try await bob.call(.post, "/console/endpoints/nobody/disable", form: [:]).body.contains("csrf_token_invalid"))

                    var alice = Browser(routes: workers.workers.routes)
                    try await alice.signIn(Self.alice)
                    let token = try await alice.csrf()
                    #expect(try await alice.call(.get, "/console/endpoints").body.contains("Disable…"))
                    let preview = try await alice.call(.get, "/console/endpoints/crm/disable")
                    #expect(preview.status == 200 && preview.body.contains("Disable now"))
                    #expect(try await alice.call(.post, "/console/endpoints/crm/disable", form: ["csrf": bobToken]).status == 403)
                    #expect(try await alice.call(.post, "/console/endpoints/nobody/disable", form: ["csrf": token]).status == 404)
                    let done = try await alice.call(.post, "/console/endpoints/crm/disable", form: ["csrf": token])
                    #expect(done.status == 200 && done.body.contains("crm disabled"))
                    #expect(try await alice.call(.get, "/console/endpoints").body.contains("disabled (operator)"))
                    #expect(try await WebhookStore(store: store).states()["crm"]?.disabled == true)
                    _ = try await alice.call(.post, "/console/endpoints/crm/enable", form: ["csrf": token])
                    #expect(try await WebhookStore(store: store).states()["crm"]?.disabled == false)
                    // A purchase with no message kept for the endpoint: refused, and recorded.
                    let missing = try await alice.call(.post, "/console/endpoints/crm/replay?purchase=pur_AAAAAAAAAAAAAAAAAAAAAA", form: ["csrf": token])
                    #expect(missing.status == 200 && missing.body.contains("refused"))

                    let audit = try await store.audit()
                    #expect(audit.map(\.action) == ["endpoint.replay", "endpoint.enable", "endpoint.disable"])
                    #expect(audit.map(\.outcome) == ["refused", "done", "done"] && Set(audit.map(\.operatorName)) == ["alice"])
                    try await waitUntil("the audit records on tollgate.audit", every: .milliseconds(200)) {
                        let records = try await TopicRecords.read(harness.topics.audit, bootstrap: harness.cluster.bootstrapServers)
                        let values = records.compactMap { try? JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any] }
                        return values.compactMap { $0["action"] as? String }.sorted() == ["endpoint.disable", "endpoint.enable", "endpoint.replay"]
                            && values.allSatisfy { $0["operator"] as? String == "alice" }
                    }
                    // A purchase's story: its event, the entitlement it left, and the message it made for the endpoint.
                    let event = NormalizedEvent(id: "apple:console-1", type: .subscriptionRenewed, source: "/apple/com.example.app",
                                                environment: .production, app: "com.example.app", subject: "apple:5000",
                                                occurredAt: "2030-01-01T00:00:00.000Z", receivedAt: "2030-01-01T00:00:00.000Z", user: "carol",
                                                product: "pro.monthly",
                                                transaction: .init(id: "apple:5001", originalId: "apple:5000", expiresAt: "2031-01-01T00:00:00.000Z"),
                                                sourceType: "test")
                    _ = try await harness.publish(event)
                    let id = store.purchaseIds.id(source: "apple", app: "com.example.app", environment: "production", subject: "apple:5000")
                    try await waitUntil("the story shows the message made for crm", every: .milliseconds(200)) {
                        let page = try await alice.call(.get, "/console/purchases/\(id)").body
                        return page.contains("subscription.renewed") && page.contains("Sent to endpoints") && page.contains("crm: ")
                    }
                    let story = try await alice.call(.get, "/console/purchases/\(id)").body
                    #expect(story.contains("apple:5001") && story.contains("carol") && story.contains("never"))
                    #expect(try await alice.call(.get, "/console/search?q=5001").headers[.location] == "/console/purchases/\(id)")
                    #expect(try await alice.call(.get, "/console/search?q=carol").headers[.location] == "/console/user?id=carol")
                    // The lists behind the overview's counts.
                    #expect(try await alice.call(.get, "/console").body.contains(#"<a href="/console/purchases">"#))
                    let recent = try await alice.call(.get, "/console/purchases").body
                    #expect(recent.contains(#"<a href="/console/purchases/\#(id)">\#(id)</a>"#) && recent.contains("subscription.renewed"))
                    let active = try await alice.call(.get, "/console/entitlements").body
                    #expect(active.contains(#"<a href="/console/user?id=carol">carol</a>"#) && active.contains("pro.monthly"))
                    let again = try await alice.call(.get, "/console/endpoints/crm/replay?purchase=\(id)")
                    #expect(again.status == 200 && again.body.contains("1 message(s) would be sent to crm again"))
                    // The endpoint's messages of the last day, or its parked ones (none yet), from the endpoints' page.
                    #expect(try await alice.call(.get, "/console/endpoints").body.contains("/console/endpoints/crm/replay?hours=24"))
                    let lastDay = try await alice.call(.get, "/console/endpoints/crm/replay?hours=24")
                    #expect(lastDay.status == 200 && lastDay.body.contains("the messages of the last 24 hours")
                            && lastDay.body.contains("1 message(s) would be sent to crm again"))
                    let parked = try await alice.call(.get, "/console/endpoints/crm/replay?parked=1")
                    #expect(parked.status == 200 && parked.body.contains("keeps none of the parked messages"))
                    #expect(try await alice.call(.get, "/console/endpoints/crm/replay?hours=5").status == 400)
                    #expect(try await alice.call(.get, "/console/endpoints/crm/replay").status == 400)
                    #expect(try await bob.call(.get, "/console/endpoints/crm/replay?hours=24").status == 403)
                    let sent = try await alice.call(.post, "/console/endpoints/crm/replay?hours=24", form: ["csrf": token])
                    #expect(sent.status == 200 && sent.body.contains("message(s)") && sent.body.contains("Recorded in the audit"))
                    #expect(try await store.audit().first?.target == "crm: the messages of the last 24 hours")

                    // Pages the operator asks for that do not exist.
                    #expect(try await alice.call(.get, "/console/purchases/pur_AAAAAAAAAAAAAAAAAAAAAA").status == 404)
                    #expect(try await alice.call(.get, "/console/purchases/not-a-purchase-id").status == 404)
                    #expect(try await alice.call(.get, "/console/user").status == 400)
                    #expect(try await alice.call(.get, "/console/dead-letters/nonsense").status == 404)
                    #expect(try await alice.call(.get, "/console/search?q=" + String(repeating: "a", count: 600)).status == 400)
                }
            }
        }
    }
}
