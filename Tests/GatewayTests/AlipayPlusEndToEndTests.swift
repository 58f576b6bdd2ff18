import Config
import Events
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

@Suite("Alipay+ end to end: signed request in, signed answer out, behind a path-rewriting proxy")
struct AlipayPlusEndToEndTests {
    static let platformKey = PrivateKey.generateRSA()!
    /// Written as the operator would: a PEM file made with the openssl command line.
    static let merchantPEM = try! Subprocess.runBlocking("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]).output
    static let clientId = "SANDBOX_5Y0000000001"
    /// The proxy strips `/pay`: the sender signs `/pay/webhooks/alipayplus`, the gateway sees `/webhooks/alipayplus`.
    static let publicPath = "/pay/webhooks/alipayplus"
    static let body = #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-5","paymentId":"pay-5","paymentAmount":{"currency":"EUR","value":"1050"},"paymentTime":"2026-11-20T10:00:00Z"}"#

    static func harness() async throws -> GatewayHarness {
        // Key generation and the openssl process run off the Swift pool (two threads on this machine),
        // so the gateways of tests running beside this one keep answering.
        let merchantPEM = await offPool { Self.merchantPEM }
        let platformPEM = try #require(await offPool { Self.platformKey.publicKeyPEM })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-alipay-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let platformPath = folder.appendingPathComponent("antom-public.pem")
        try Data(platformPEM.utf8).write(to: platformPath)
        let merchantPath = folder.appendingPathComponent("merchant.pem")
        try Data(merchantPEM.utf8).write(to: merchantPath)
        return try await GatewayHarness(publicPathPrefix: "/pay") { sources in
            sources.alipayplus.clients = [AlipayPlusSettings.Client(
                clientId: clientId, platformPublicKeys: [.init(path: platformPath.path, keyVersion: 1)],
                merchantPrivateKey: merchantPath.path, merchantKeyVersion: 1)]
        }
    }

    static func headers(path: String = publicPath, clientId: String = clientId, time: String = Timestamp.now.rfc3339,
                        body: String = body, key: PrivateKey = platformKey) -> [String: String] {
        let signature = key.signRSASHA256(Array("POST \(path)\n\(clientId).\(time).\(body)".utf8))!
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = Base64.encodeStandard(signature).addingPercentEncoding(withAllowedCharacters: allowed)!
        return ["Content-Type": "application/json; charset=UTF-8", "Client-Id": clientId, "Request-Time": time,
                "Signature": "algorithm=RSA256,keyVersion=1,signature=\(encoded)"]
    }

    @Test("an authentic notifyPayment is published and answered with the signed success body")
    func accepted() async throws {
        let harness = try await Self.harness()
        let response = try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(), body: Self.body)
        #expect(response.status == 200, "\(response.body)")
        #expect(response.body == #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.headers["client-id"] == Self.clientId)
        let responseTime = try #require(response.headers["response-time"])
        let signatureHeader = try #require(response.headers["signature"])
        let prefix = "algorithm=RSA256,keyVersion=1,signature="
        #expect(signatureHeader.hasPrefix(prefix))
        let signature = try #require(String(signatureHeader.dropFirst(prefix.count)).removingPercentEncoding.flatMap(Base64.decodeStandard))
        let signed = Array("POST \(Self.publicPath)\n\(Self.clientId).\(responseTime).\(response.body)".utf8)
        let merchantPublic = try #require(PrivateKey.load(pemOrDER: Array(Self.merchantPEM.utf8))?.publicKey)
        #expect(merchantPublic.verifyRSASHA256(message: signed, signature: signature))
        #expect(!(try #require(Self.platformKey.publicKey)).verifyRSASHA256(message: signed, signature: signature))

        let raw = try await harness.records(harness.topics.raw(.alipayplus))
        #expect(raw.count == 1)
        #expect(raw.first?.key == "order-5")
        #expect(raw.first?.value == Self.body)
        #expect(raw.first?.headers.contains("tollgate_path=/pay/webhooks/alipayplus") == true)
        let events = try await harness.records(harness.topics.events)
        #expect(events.count == 1)
        for header in ["ce_id=alipayplus:\(Self.clientId):pay-5:PAYMENT_RESULT:S", "ce_source=/alipayplus/\(Self.clientId)",
                       "ce_type=dev.tollgate.purchase.completed", "ce_subject=order-5"] {
            #expect(events.first?.headers.contains(header) == true, "missing \(header)")
        }
        await harness.stop()
    }

    @Test("a signature over the rewritten path, a changed Request-Time or an unknown client is refused and counted")
    func refusals() async throws {
        let harness = try await Self.harness()
        let rewritten = try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(path: "/webhooks/alipayplus"), body: Self.body)
        #expect(rewritten.status == 401)
        #expect(rewritten.body.contains(#""error":"bad_signature""#))
        var changedTime = Self.headers()
        changedTime["Request-Time"] = "2026-11-20T18:00:01+08:00"
        #expect(try await harness.client.request("POST", "/webhooks/alipayplus", headers: changedTime, body: Self.body).status == 401)
        let unknown = try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(clientId: "stranger"), body: Self.body)
        #expect(unknown.status == 403)
        #expect(unknown.body.contains(#""error":"unknown_client""#))
        #expect(unknown.headers["signature"] == nil)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "alipayplus", "reason": "bad_signature"]) == 2)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "alipayplus", "reason": "unknown_client"]) == 1)
        #expect(try await harness.records(harness.topics.raw(.alipayplus)).isEmpty)
        await harness.stop()
    }

    @Test("the signed Request-Time: fresh is accepted, older than the window or skewed into the future is 401 request_time_outside_window")
    func requestTimeWindow() async throws {
        let harness = try await Self.harness()
        let now = Timestamp.now.millisecondsSince1970
        func post(_ time: String) async throws -> RawHTTPClient.Response {
            try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(time: time), body: Self.body)
        }
        let old = try await post(Timestamp(millisecondsSince1970: now - 90_060_000).rfc3339)
        #expect(old.status == 401)
        #expect(old.body.contains(#""error":"request_time_outside_window""#))
        let ahead = try await post(String(now + 600_000))
        #expect(ahead.status == 401)
        #expect(ahead.body.contains(#""error":"request_time_outside_window""#))
        #expect(try await harness.records(harness.topics.raw(.alipayplus)).isEmpty, "nothing refused was published")
        let fresh = try await post(Timestamp(millisecondsSince1970: now - 3_600_000).rfc3339)
        #expect(fresh.status == 200, "an hour-old retry is accepted")
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "alipayplus", "reason": "request_time_outside_window"]) == 2)
        #expect(try await harness.records(harness.topics.events).count == 1)
        await harness.stop()
    }

    @Test("Alipay+'s participant notifyPayment (paymentResult, no notifyType) is accepted and published as the same event")
    func participantShape() async throws {
        let harness = try await Self.harness()
        let participant = #"{"paymentResult":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"order-5","paymentId":"pay-5","paymentAmount":{"currency":"EUR","value":"1050"},"paymentTime":"2026-11-20T10:00:00Z","acquirerId":"1022188000000000001","pspId":"1022172000000000001","customerId":"c-77"}"#
        let response = try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(body: participant), body: participant)
        #expect(response.status == 200, "\(response.body)")
        #expect(response.body == AlipayPlusSource.responseBody)
        let events = try await harness.records(harness.topics.events)
        #expect(events.count == 1)
        for header in ["ce_id=alipayplus:\(Self.clientId):pay-5:PAYMENT_RESULT:S", "ce_type=dev.tollgate.purchase.completed", "ce_subject=order-5"] {
            #expect(events.first?.headers.contains(header) == true, "missing \(header)")
        }
        // The merchant-side notification of the same payment is the same event: a duplicate.
        #expect(try await harness.client.request("POST", "/webhooks/alipayplus", headers: Self.headers(), body: Self.body).status == 200)
        #expect(try await harness.records(harness.topics.events).count == 1)
        await harness.stop()
    }
}
