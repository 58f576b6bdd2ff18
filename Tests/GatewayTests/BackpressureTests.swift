import Config
import Foundation
import Testing

/// `limits`: bounded requests in flight (503 `overloaded`) and per-sender rates (429 `rate_limited`),
/// decided before the body is read.
@Suite("Backpressure: in-flight bounds and rate limits")
struct BackpressureTests {
    /// A webhook request whose head and first half of body are sent: admitted, and held open
    /// until `finish()` sends the rest.
    struct HeldRequest {
        let connection: RawConnection
        let rest: String

        static func open(_ harness: GatewayHarness, path: String = "/webhooks/iaptic") async throws -> HeldRequest {
            let body = Bodies.renewal()
            let half = body.utf8.count / 2
            let connection = try RawConnection(port: harness.port)
            let head = RawConnection.head("POST", path, [("Content-Type", "application/json"), ("Content-Length", String(body.utf8.count))])
            await connection.send(head + String(body.prefix(half)))
            return HeldRequest(connection: connection, rest: String(body.dropFirst(half)))
        }

        func finish() async throws -> RawHTTPClient.Response? {
            await connection.send(rest)
            return try await connection.readResponse()
        }
    }

    static func inFlight(_ harness: GatewayHarness, _ source: String = "iaptic") async throws -> Double {
        try await harness.metric("tollgate_http_in_flight", ["source": source])
    }

    @Test("past limits.maxInFlight the next request gets 503 overloaded with Retry-After, whatever its sender; released slots admit again")
    func totalBound() async throws {
        var limits = LimitSettings()
        limits.maxInFlight = 2
        limits.maxInFlightPerSource = 2
        let harness = try await GatewayHarness(limits: limits)
        let held = [try await HeldRequest.open(harness), try await HeldRequest.open(harness)]
        #expect(try await eventually { try await Self.inFlight(harness) == 2 })

        let refused = try await harness.postIaptic(Bodies.renewal())
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.body.contains(#""error":"overloaded""#))
        let otherSender = try await harness.client.request("POST", "/webhooks/google",
                                                           headers: ["Content-Type": "application/json", "Authorization": "Bearer x.y.z"], body: "{}")
        #expect(otherSender.status == 503, "the total bound covers every sender")
        // Operations endpoints are not webhook requests and stay reachable.
        #expect(try await harness.client.request("GET", "/healthz").status == 200)

        for request in held { #expect(try await request.finish()?.status == 200) }
        #expect(try await eventually { try await Self.inFlight(harness) == 0 })
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "iaptic", "reason": "overloaded"]) == 1)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "google", "reason": "overloaded"]) == 1)
        await harness.stop()
    }

    @Test("limits.maxInFlightPerSource bounds one sender without touching the others")
    func perSourceBound() async throws {
        var limits = LimitSettings()
        limits.maxInFlight = 8
        limits.maxInFlightPerSource = 1
        let harness = try await GatewayHarness(limits: limits)
        let held = try await HeldRequest.open(harness)
        #expect(try await eventually { try await Self.inFlight(harness) == 1 })

        let refused = try await harness.postIaptic(Bodies.renewal())
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.body.contains("overloaded"))
        // Google is not configured here: its own verdict (401), not the Iaptic bound, answers.
        let google = try await harness.client.request("POST", "/webhooks/google",
                                                      headers: ["Content-Type": "application/json", "Authorization": "Bearer x.y.z"], body: "{}")
        #expect(google.status == 401)
        #expect(try await Self.inFlight(harness, "google") == 0)

        #expect(try await held.finish()?.status == 200)
        #expect(try await eventually { try await Self.inFlight(harness) == 0 })
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        #expect(try await harness.metric("tollgate_rejections_total", ["reason": "overloaded"]) == 1)
        await harness.stop()
    }

    @Test("a sender past its limits.rates allowance gets 429 rate_limited with Retry-After, and is admitted again once the bucket refills")
    func rateLimit() async throws {
        var limits = LimitSettings()
        limits.rates[.iaptic] = LimitSettings.Rate(perSecond: 1, burst: 2)
        let harness = try await GatewayHarness(limits: limits)

        // The burst is admitted; then, before a second has refilled a token, a request is refused.
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        var limited: RawHTTPClient.Response?
        for _ in 0..<20 where limited == nil {
            let response = try await harness.postIaptic(Bodies.renewal())
            if response.status == 429 { limited = response } else { #expect(response.status == 200) }
        }
        let refusal = try #require(limited)
        #expect(refusal.body.contains(#""error":"rate_limited""#))
        let retryAfter = try #require(refusal.headers["retry-after"].flatMap(Int.init))
        #expect(retryAfter == 1, "one token a second: a token is at most a second away")

        // Other senders and the operations endpoints are not limited.
        let google = try await harness.client.request("POST", "/webhooks/google",
                                                      headers: ["Content-Type": "application/json", "Authorization": "Bearer x.y.z"], body: "{}")
        #expect(google.status == 401)
        #expect(try await harness.client.request("GET", "/healthz").status == 200)

        try await Task.sleep(for: .seconds(retryAfter))
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "iaptic", "reason": "rate_limited"]) >= 1)
        #expect(try await Self.inFlight(harness) == 0)
        await harness.stop()
    }

    @Test("a flood of unauthenticated requests on a sender's route takes none of its rate: authentic deliveries keep getting through")
    func unauthenticatedFlood() async throws {
        var limits = LimitSettings()
        limits.rates[.iaptic] = LimitSettings.Rate(perSecond: 2, burst: 2)
        let harness = try await GatewayHarness(limits: limits)

        // Far more forged deliveries than the burst: each is refused for what it is, none spends a token.
        for index in 0..<200 {
            let forged = try await harness.postIaptic(Bodies.renewal(password: "not-the-secret", notificationId: "forged-\(index)"))
            #expect(forged.status == 401, "forged delivery \(index): \(forged.status)")
        }
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "iaptic", "reason": "wrong_password"]) == 200)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "iaptic", "reason": "rate_limited"]) == 0)
        // The authentic deliveries find the whole burst, interleaved with more forged ones.
        for index in 0..<2 {
            _ = try await harness.postIaptic(Bodies.renewal(password: "not-the-secret", notificationId: "forged-again-\(index)"))
            let authentic = try await harness.postIaptic(Bodies.renewal(notificationId: "authentic-\(index)"))
            #expect(authentic.status == 200, "authentic delivery \(index): \(authentic.status) \(authentic.body)")
        }
        // Authentic deliveries still meet the rate.
        var limited = false
        for index in 0..<20 where !limited {
            limited = try await harness.postIaptic(Bodies.renewal(notificationId: "more-\(index)")).status == 429
        }
        #expect(limited)
        #expect(try await Self.inFlight(harness) == 0)
        await harness.stop()
    }
}
