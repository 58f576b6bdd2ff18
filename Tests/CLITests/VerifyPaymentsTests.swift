import Foundation
import TestSupport
import Testing

/// `tollgate verify` on Citcon and Alipay+ deliveries signed with the openssl command line, as an
/// operator would check a captured delivery.
@Suite("tollgate verify: Citcon and Alipay+")
struct VerifyPaymentsTests {
    static func openssl(_ arguments: [String], input: Data = Data()) async throws -> Data {
        try await Subprocess.run("/usr/bin/openssl", arguments, stdin: input).stdout
    }

    static func sha256Hex(_ text: String) async throws -> String {
        let output = String(decoding: try await openssl(["dgst", "-sha256", "-r"], input: Data(text.utf8)), as: UTF8.self)
        return String(output.prefix(64))
    }

    @Test("a Citcon UPI IPN verifies for its account's path; an unknown account exits 1")
    func citcon() async throws {
        let config = try CLI.temporaryFile("tollgate.yaml", "sources: { citcon: { accounts: [{ name: acme, secrets: [cli-upi] }] } }")
        let fields = "id,transaction_type,reference,amount,currency,status"
        let sign = try await Self.sha256Hex("amount=700&currency=KRW&fields=\(fields)&id=i-1&reference=r-1&status=success&transaction_type=refund&secret=cli-upi")
        let body = try CLI.temporaryFile("ipn.json", #"{"id":"i-1","transaction_type":"refund","reference":"r-1","amount":700,"currency":"KRW","status":"success","fields":"\#(fields)","sign":"\#(sign)"}"#)

        let accepted = try await CLI.run(["verify", "--source", "citcon", "--config", config, "--path", "/webhooks/citcon/acme",
                                    "--header", "Content-Type: application/json", "--show-response", body])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let events = try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [[String: Any]]
        #expect(events?.first?["id"] as? String == "citcon:acme:i-1:refund:success")
        #expect(events?.first?["type"] as? String == "purchase.refunded")
        #expect((events?.first?["price"] as? [String: Any])?["amountMicros"] as? Int == 700_000_000)
        let response = try JSONSerialization.jsonObject(with: Data(accepted.stderr.utf8)) as? [String: Any]
        #expect(response?["body"] as? String == "ok")
        #expect(response?["status"] as? Int == 200)

        let unknown = try await CLI.run(["verify", "--source", "citcon", "--config", config, "--path", "/webhooks/citcon/other", body])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains(#""error":"unknown_account""#))
    }

    @Test("an Alipay+ delivery verifies with --header and --path, and --show-response prints the signed answer")
    func alipayPlus() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cli-alipay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let platformPrivate = folder.appendingPathComponent("platform-private.pem").path
        let platformPublic = folder.appendingPathComponent("platform-public.pem").path
        let merchantPrivate = folder.appendingPathComponent("merchant-private.pem").path
        _ = try await Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", platformPrivate])
        _ = try await Self.openssl(["pkey", "-in", platformPrivate, "-pubout", "-out", platformPublic])
        _ = try await Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", merchantPrivate])
        let config = try CLI.temporaryFile("tollgate.yaml", """
            sources:
              alipayplus:
                clients: [{ clientId: cli-client, platformPublicKeys: [\(platformPublic)], merchantPrivateKey: \(merchantPrivate) }]
            """)
        let body = #"{"notifyType":"PAYMENT_PENDING","result":{"resultCode":"PAYMENT_IN_PROCESS","resultStatus":"U"},"paymentRequestId":"o-1","paymentId":"p-1"}"#
        let time = "1763697600000"
        let signature = try await Self.openssl(["dgst", "-sha256", "-sign", platformPrivate],
                                         input: Data("POST /notify\ncli-client.\(time).\(body)".utf8))
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = try #require(signature.base64EncodedString().addingPercentEncoding(withAllowedCharacters: allowed))
        let bodyFile = try CLI.temporaryFile("notify.json", body)
        let headers = ["--header", "Client-Id: cli-client", "--header", "Request-Time: \(time)",
                       "--header", "Signature: algorithm=RSA256,keyVersion=1,signature=\(encoded)"]

        // --at: the signed Request-Time (1763697600000, 2025-11-21T04:00:00Z) is judged against it.
        let accepted = try await CLI.run(["verify", "--source", "alipayplus", "--config", config, "--path", "/notify", "--show-response",
                                          "--at", "2025-11-21T04:00:30Z"]
                                   + headers + [bodyFile])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let events = try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [[String: Any]]
        #expect(events?.first?["id"] as? String == "alipayplus:cli-client:p-1:PAYMENT_PENDING:U")
        #expect(events?.first?["type"] as? String == "purchase.pending")
        let response = try JSONSerialization.jsonObject(with: Data(accepted.stderr.utf8)) as? [String: Any]
        #expect(response?["body"] as? String == #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#)
        let names = (response?["headers"] as? [[String]])?.map { $0[0] }
        #expect(names == ["Content-Type", "Client-Id", "Response-Time", "Signature"])

        let wrongPath = try await CLI.run(["verify", "--source", "alipayplus", "--config", config, "--path", "/webhooks/alipayplus",
                                           "--at", "2025-11-21T04:00:30Z"]
                                    + headers + [bodyFile])
        #expect(wrongPath.status == 1)
        #expect(wrongPath.stderr.contains(#""error":"bad_signature""#))

        let badKey = try CLI.temporaryFile("bad.yaml", "sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [/nonexistent.pem] }] } }")
        let configError = try await CLI.run(["verify", "--source", "alipayplus", "--config", badKey, bodyFile])
        #expect(configError.status == 2)
        #expect(configError.stderr.contains("sources.alipayplus.clients[0].platformPublicKeys[0]"))
    }
}
