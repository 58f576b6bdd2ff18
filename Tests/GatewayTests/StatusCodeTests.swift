import Foundation
import Testing

@Suite("Status codes, limits and their metrics")
struct StatusCodeTests {
    @Test("each refusal gets its status, is counted, and publishes nothing")
    func refusals() async throws {
        let harness = try await GatewayHarness(maxBodyBytes: 4_096)
        let client = harness.client

        let wrongPassword = try await harness.postIaptic(Bodies.renewal(password: "guess"))
        #expect(wrongPassword.status == 401)
        #expect(wrongPassword.body.contains(#""error":"wrong_password""#))
        #expect(!wrongPassword.body.contains("guess"), "never echo secrets")

        let invalidJSON = try await harness.postIaptic("{not json")
        #expect(invalidJSON.status == 400)
        #expect(invalidJSON.body.contains("malformed_json"))

        let tooLarge = try await harness.postIaptic(String(repeating: "x", count: 5_000))
        #expect(tooLarge.status == 413)

        let wrongType = try await harness.postIaptic(Bodies.renewal(), contentType: "application/xml")
        #expect(wrongType.status == 415)

        let unknown = try await client.request("POST", "/webhooks/paypal", body: "{}")
        #expect(unknown.status == 404)
        #expect(unknown.body.contains("not_found"))

        let wrongMethod = try await client.request("GET", "/webhooks/iaptic")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "POST")

        for (reason, source) in [("wrong_password", "iaptic"), ("malformed_json", "iaptic"), ("body_too_large", "iaptic"),
                                 ("unsupported_media_type", "iaptic"), ("not_found", "none"), ("method_not_allowed", "iaptic")] {
            #expect(try await harness.metric("tollgate_rejections_total", ["source": source, "reason": reason]) == 1, "\(reason)")
        }
        #expect(try await harness.metric("tollgate_http_requests_total", ["status": "401"]) == 1)
        #expect(try await harness.metric("tollgate_http_request_duration_seconds_count", ["route": "/webhooks/iaptic"]) == 4)

        // Nothing reached any topic; a good delivery afterwards is the only record.
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        for topic in harness.topics.all.map(\.name) {
            let expected = topic == harness.topics.events || topic == harness.topics.raw(.iaptic) ? 1 : 0
            #expect(try await harness.records(topic).count == expected, "\(topic)")
        }
        await harness.stop()
    }

    @Test("a sender left unconfigured refuses every delivery with a JSON error, and does not make the gateway unready")
    func unconfiguredSender() async throws {
        let harness = try await GatewayHarness()
        let response = try await harness.client.request("POST", "/webhooks/google",
                                                        headers: ["Content-Type": "application/json", "Authorization": "Bearer x.y.z"], body: "{}")
        #expect(response.status == 401)
        #expect(response.body.contains(#""error":"wrong_audience""#))
        #expect(try await harness.client.request("GET", "/readyz").status == 200)
        await harness.stop()
    }

    @Test("an announced oversize body is refused before it is sent")
    func announcedTooLarge() async throws {
        let harness = try await GatewayHarness(maxBodyBytes: 4_096)
        let head = "POST /webhooks/iaptic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
        // Only the head is sent: the answer must not wait for 100 MB that never come.
        let response = try await harness.client.exchange([Array(head.utf8)])
        #expect(response.status == 413)
        await harness.stop()
    }

    @Test("a chunked body is cut off while streaming, without waiting for its end")
    func streamedTooLarge() async throws {
        let harness = try await GatewayHarness(maxBodyBytes: 4_096)
        let head = "POST /webhooks/iaptic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = RawHTTPClient.chunk([UInt8](repeating: 0x20, count: 1_024))
        // Eight 1 KiB chunks and no terminating chunk: the limit must trigger mid-stream.
        let response = try await harness.client.exchange([Array(head.utf8)] + Array(repeating: chunk, count: 8))
        #expect(response.status == 413)
        #expect(try await harness.records(harness.topics.raw(.iaptic)).isEmpty)
        await harness.stop()
    }

    @Test("a body just under the limit is accepted")
    func withinLimit() async throws {
        let harness = try await GatewayHarness(maxBodyBytes: 4_096)
        let body = Bodies.renewal()
        let padded = body.dropLast() + #","pad":""# + String(repeating: "p", count: 4_096 - body.utf8.count - 9) + "\"}"
        #expect(padded.utf8.count == 4_096)
        #expect(try await harness.postIaptic(String(padded)).status == 200)
        await harness.stop()
    }

    @Test("health, readiness and metrics endpoints answer")
    func operations() async throws {
        let harness = try await GatewayHarness()
        let health = try await harness.client.request("GET", "/healthz")
        #expect(health.status == 200)
        let ready = try await harness.client.request("GET", "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.contains(#""ready":true"#))
        let metrics = try await harness.client.request("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
        #expect(metrics.body.contains("tollgate_http_requests_total"))

        harness.cluster.setAllBrokers(up: false)
        try await Task.sleep(for: .seconds(1.2))
        let notReady = try await harness.client.request("GET", "/readyz")
        #expect(notReady.status == 503)
        await harness.stop()
    }
}
