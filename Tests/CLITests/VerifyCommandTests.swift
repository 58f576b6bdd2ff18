import Foundation
import Testing

@Suite("tollgate verify")
struct VerifyCommandTests {
    let config = try! CLI.temporaryFile("tollgate.yaml", """
        sources:
          iaptic:
            apps: [{ name: shop, secrets: [cli-secret] }]
        """)

    func body(password: String) -> String {
        #"{"type":"purchases.updated","password":"\#(password)","applicationUsername":"u","notification":{"id":"n-9","reason":"EXPIRED"},"purchases":{"m":{"purchaseId":"apple:9","expirationDate":"2026-01-01T00:00:00Z"}}}"#
    }

    @Test("an authentic delivery exits 0 and prints the normalized events")
    func accepted() async throws {
        let file = try CLI.temporaryFile("body.json", body(password: "cli-secret"))
        let result = try await CLI.run(["verify", "--source", "iaptic", "--config", config, "--at", "2026-11-21T00:00:00Z",
                                  "--header", "Content-Type: application/json", file])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        #expect(events?.count == 1)
        #expect(events?.first?["id"] as? String == "iaptic:shop:n-9:apple:9")
        #expect(events?.first?["type"] as? String == "subscription.expired")
        #expect(events?.first?["receivedAt"] as? String == "2026-11-21T00:00:00.000Z")
    }

    @Test("a rejected delivery exits 1 with the reason code on stderr")
    func rejected() async throws {
        let result = try await CLI.run(["verify", "--source", "iaptic", "--config", config, "-"], stdin: body(password: "wrong"))
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let error = try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: String]
        #expect(error?["error"] == "wrong_password")
        #expect(error?["message"] != nil)
    }

    @Test("a contradicting content type is refused as the server would")
    func contentType() async throws {
        let result = try await CLI.run(["verify", "--source", "iaptic", "--config", config, "--header", "Content-Type: text/xml", "-"],
                                 stdin: body(password: "cli-secret"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("unsupported_media_type"))
    }

    @Test("usage and configuration errors exit 2", arguments: [
        ["verify", "--source", "iaptic"],
        ["verify", "--source", "paypal", "x"],
        ["verify", "--source", "iaptic", "--at", "yesterday", "x"],
        ["verify", "--source", "iaptic", "--header", "no-colon", "x"],
        ["verify", "--source", "iaptic", "/nonexistent/body.json"],
    ])
    func usage(arguments: [String]) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 2, "\(result.stderr)")
    }

    @Test("a configuration error exits 2 and names the key")
    func badConfig() async throws {
        let bad = try CLI.temporaryFile("bad.yaml", "sources: { iaptic: { apps: [{ name: x, secrets: [s], colour: red }] } }")
        let result = try await CLI.run(["verify", "--source", "iaptic", "--config", bad, "-"], stdin: "{}")
        #expect(result.status == 2)
        #expect(result.stderr.contains("sources.iaptic.apps[0].colour"))
    }
}
