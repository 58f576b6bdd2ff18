import Config
import Events
import Foundation
import TestSupport
import Testing
import Toolkit
@testable import Verifiers

/// Citcon's own published UPI example (../shared/conformance/citcon, never copied into the repo).
@Suite("Citcon: conformance with Citcon's published example", .enabled(if: SharedFiles.present, "../shared/conformance is absent"))
struct CitconConformanceTests {
    @Test("the published body verifies with its secret, signs the published string, and fails with another secret")
    func publishedExample() async throws {
        let folder = SharedFiles.root.appendingPathComponent("conformance/citcon")
        let body = try Data(contentsOf: folder.appendingPathComponent("official-doc-example.body.json"))
        let spec = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("official-doc-example.json"))) as? [String: Any])
        let secret = try #require(spec["secret"] as? String)

        let signature = try CitconSignature(body: CitconBody.parse(Array(body), format: .upi))
        #expect(signature.signedText(secret: secret) == spec["string_to_sign"] as? String)
        #expect(signature.expected(secret: secret) == spec["expected_sign"] as? String)

        var settings = CitconSettings()
        settings.accounts = [CitconSettings.Account(name: "citcon-demo", secrets: [secret])]
        let request = WebhookRequest(path: "/webhooks/citcon", headers: HeaderFields([("Content-Type", "application/json")]),
                                     body: Array(body), receivedAt: Timestamp(millisecondsSince1970: 0))
        #expect(await CitconSource(settings: settings).reason(request) == nil)
        settings.accounts = [CitconSettings.Account(name: "citcon-demo", secrets: [secret + "x"])]
        #expect(await CitconSource(settings: settings).reason(request) == .badSignature)
    }
}
