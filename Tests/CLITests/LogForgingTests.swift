import Foundation
import Kafka
import TestSupport
import Testing
import Verifiers
#if canImport(Glibc)
import Glibc
#endif

/// Request values that reach log lines (through a rejection's detail) cannot write a line or a field
/// of their own: `tollgate serve` with every sender configured gets one hostile delivery per sender,
/// in both log formats, and its output is read back line by line.
@Suite("Log lines cannot be forged", .serialized)
struct LogForgingTests {
    /// What a forged line would start with in the text format, after a newline in a value.
    static let forgedText = "2026-01-01T00:00:00.000Z critical tollgate: admin=yes [Gateway] FORGED"
    /// The start of a forged JSON line (the sender's name follows the marker).
    static let forgedJSON = #"{"ts":"2026-01-01T00:00:00.000Z","level":"critical","msg":"FORGED"#
    static let iapticSecret = "log-forging-iaptic-secret"

    @Test("newlines, carriage returns, NEL, U+2028 and field-looking text from every sender stay inside their line",
          arguments: ["text", "json"])
    func hostileValues(format: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-logs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try MockCluster(brokers: 1)
        let chain = try AppleTestChain()
        let rootPath = directory.appendingPathComponent("apple-root.pem").path
        try Data(chain.root.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            log: { level: info, format: \(format) }
            kafka: { brokers: "\(cluster.bootstrapServers)", ackTimeoutMs: 1000 }
            spool: { path: \(directory.appendingPathComponent("spool.sqlite").path) }
            sources:
              apple:
                roots: [\(rootPath)]
                apps: [{ bundleId: com.example.logs, appAppleId: 1234, environments: [Sandbox] }]
              citcon:
                accounts: [{ name: shop, secrets: [log-forging-citcon-secret] }]
              iaptic:
                apps: [{ name: app, secrets: [\(Self.iapticSecret)] }]
              google:
                audience: https://example.com/webhooks/google
                serviceAccountEmail: push@example.iam.gserviceaccount.com
                packages: [com.example.logs]
                jwks: https://127.0.0.1:9/certs
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let gateway = try ChildProcess(["serve", "--config", configPath], directory: directory, name: "gateway")
        defer { if gateway.isRunning { gateway.signal(SIGKILL) } }
        let base = "http://127.0.0.1:\(try await gateway.gatewayPort())"
        let forged = format == "json" ? Self.forgedJSON : Self.forgedText
        let json = ["Content-Type": "application/json"]

        // Apple: the JWS header's alg is refused with its value in the detail.
        let appleHeader = Self.base64URL(#"{"alg":"ES256\n\#(forged.jsonEscaped)-apple","x5c":["AAAA"]}"#)
        let apple = try await HTTP.request("POST", base + "/webhooks/apple", headers: json,
                                           body: #"{"signedPayload":"\#(appleHeader).e30.c2ln"}"#)
        // Citcon: a name listed in fields but absent from the body, before any signature is checked
        // (fields is split at commas, so the forged line is the comma-free text one in both formats).
        let citcon = try await HTTP.request("POST", base + "/webhooks/citcon", headers: json,
                                            body: #"{"sign":"00","fields":"a\r\n\#(Self.forgedText.jsonEscaped)-citcon"}"#)
        // Iaptic: a purchases key, once the password matched.
        let iaptic = try await HTTP.request("POST", base + "/webhooks/iaptic", headers: json, body: """
            {"type":"purchases.updated","password":"\(Self.iapticSecret)","purchases":{"p\\n\(forged.jsonEscaped)-iaptic":1}}
            """)
        // Google: the token header's alg (Google's messages show such values only when short and printable).
        let googleToken = Self.base64URL(#"{"alg":"RS\n\#(forged.jsonEscaped)-google","kid":"k"}"#) + ".e30.c2ln"
        let google = try await HTTP.request("POST", base + "/webhooks/google",
                                            headers: json.merging(["Authorization": "Bearer \(googleToken)"]) { $1 },
                                            body: #"{"message":{"data":"e30=","messageId":"1"},"subscription":"projects/p/subscriptions/s"}"#)
        // Alipay+: a header cannot hold a newline, but it can hold NEL, U+2028 and a field-looking tail.
        let alipay = try await HTTP.request("POST", base + "/webhooks/alipayplus",
                                            headers: json.merging(["Client-Id": "c\u{85}x\u{2028}y source=forged reason=ok FORGED-alipayplus"]) { $1 },
                                            body: "{}")
        for (sender, answer) in [("apple", apple), ("citcon", citcon), ("iaptic", iaptic), ("google", google), ("alipayplus", alipay)] {
            #expect((400..<500).contains(answer.status), "\(sender): \(answer.status) \(answer.body)")
        }

        let output = try await eventually("the five rejections are logged") { () -> String? in
            let text = gateway.output
            return text.components(separatedBy: "delivery rejected").count > 5 ? text : nil
        }
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(!output.unicodeScalars.contains("\u{2028}") && !output.unicodeScalars.contains("\u{85}") && !output.contains("\r"),
                "no raw line separator reaches the output")
        for line in lines where line.contains("FORGED") {
            #expect(line.contains("delivery rejected"), "a value wrote a line of its own: \(line)")
        }
        for sender in ["apple", "citcon", "iaptic", "alipayplus"] {
            let line = try #require(lines.first { $0.contains("FORGED-\(sender)") }, "\(sender)'s hostile value is logged, escaped")
            #expect(line.contains(format == "json" ? #""source":"\#(sender)""# : "source=\(sender) "), "\(line)")
        }
        #expect(lines.contains { $0.contains("delivery rejected") && $0.contains("google") && $0.contains("not shown") })
        if format == "json" {
            for line in lines where line.hasPrefix("{") {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["msg"] != nil, "each JSON line is one object: \(line)")
            }
        } else {
            // The field-looking tail stays inside the quoted detail: the line has one source and one reason.
            let alipayLine = try #require(lines.first { $0.contains("FORGED-alipayplus") })
            #expect(alipayLine.contains(#" detail="Client-Id c\u0085x\u2028y source=forged reason=ok FORGED-alipayplus is not configured" "#),
                    "\(alipayLine)")
            #expect(alipayLine.contains(" reason=unknown_client source=alipayplus [Gateway] delivery rejected"), "\(alipayLine)")
        }
        gateway.signal(SIGTERM)
        _ = await gateway.waitForExit(within: .seconds(20))
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

private extension String {
    /// Inside a JSON string literal.
    var jsonEscaped: String { replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") }
}
