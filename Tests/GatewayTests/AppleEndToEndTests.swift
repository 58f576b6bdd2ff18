import Config
import Events
import Foundation
import Testing
import Verifiers

enum SharedFolder {
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared")
    static var present: Bool { FileManager.default.fileExists(atPath: url.appendingPathComponent("conformance").path) }
}

/// Real Apple-signed notifications (read from ../shared/conformance) through the whole gateway.
@Suite("Apple end to end", .enabled(if: SharedFolder.present, "../shared is absent"))
struct AppleEndToEndTests {
    static var shared: URL { SharedFolder.url }

    static func settings() -> AppleSettings {
        var apple = AppleSettings()
        apple.roots = [shared.appendingPathComponent("fixtures/apple/AppleRootCA-G3.pem").path]
        apple.apps = [AppleSettings.App(bundleId: "com.loki-project.loki-messenger", appAppleId: 1_470_168_868, environments: ["Sandbox"])]
        return apple
    }

    static func body(_ file: String) throws -> String {
        let jws = try String(contentsOf: shared.appendingPathComponent("conformance/apple/real/\(file)"), encoding: .utf8)
        return #"{"signedPayload":"\#(jws.trimmingCharacters(in: .whitespacesAndNewlines))"}"#
    }

    @Test("a real notification is answered 200 with an empty body after its event is on Kafka")
    func accepted() async throws {
        let harness = try await GatewayHarness(apple: Self.settings())
        let response = try await harness.client.request("POST", "/webhooks/apple", headers: ["Content-Type": "application/json"],
                                                        body: try Self.body("02-DID_RENEW.jws"))
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        let events = try await harness.records(harness.topics.events)
        #expect(events.count == 1)
        #expect(events.first?.key == "2000001024993299")
        #expect(events.first?.headers.contains("ce_id=apple:1a7cdc3d-9360-49c3-ae37-0423e4c6e7c7") == true)
        #expect(events.first?.headers.contains("ce_source=/apple/com.loki-project.loki-messenger") == true)
        #expect(try await harness.records(harness.topics.raw(.apple)).count == 1)
        await harness.stop()
    }

    @Test("a tampered notification is 401 bad_signature, counted, and publishes nothing")
    func tampered() async throws {
        let harness = try await GatewayHarness(apple: Self.settings())
        let body = try Self.body("03-SUBSCRIBED-RESUBSCRIBE.jws")
        // Flip one character of the signature part.
        let flipped = body.hasSuffix("A\"}") ? String(body.dropLast(3)) + "B\"}" : String(body.dropLast(3)) + "A\"}"
        let response = try await harness.client.request("POST", "/webhooks/apple", headers: ["Content-Type": "application/json"], body: flipped)
        #expect(response.status == 401 || response.status == 400)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "apple"]) == 1)
        #expect(try await harness.records(harness.topics.events).isEmpty)
        await harness.stop()
    }

    @Test("an app that is not configured is 403")
    func unknownApp() async throws {
        var settings = Self.settings()
        settings.apps = [AppleSettings.App(bundleId: "com.example.other", appAppleId: 1, environments: ["Sandbox"])]
        let harness = try await GatewayHarness(apple: settings)
        let response = try await harness.client.request("POST", "/webhooks/apple", body: try Self.body("02-DID_RENEW.jws"))
        #expect(response.status == 403)
        #expect(response.body.contains("unknown_app"))
        await harness.stop()
    }
}
