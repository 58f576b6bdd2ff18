import Config
import Foundation
import Testing

/// Hostile HTTP: oversized heads, slow-loris heads, bodies that stop, clients that hang up.
@Suite("HTTP hardening: head limits, head and body deadlines")
struct HTTPHardeningTests {
    static let json = ("Content-Type", "application/json")

    static func rejections(_ harness: GatewayHarness, _ source: String, _ reason: String) async throws -> Double {
        try await harness.metric("tollgate_rejections_total", ["source": source, "reason": reason])
    }

    @Test("a header past http.maxHeaderBytes, or too many header fields, gets JSON 431 headers_too_large, counted, and the connection closes")
    func oversizedHead() async throws {
        let harness = try await GatewayHarness()
        let connection = try RawConnection(port: harness.port)
        await connection.send(RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("Authorization", String(repeating: "a", count: 200_000)),
                                                                          ("Content-Length", "2")]) + "{}")
        let response = try #require(try await connection.readResponse())
        #expect(response.status == 431)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.headers["connection"] == "close")
        #expect(response.body.contains(#""error":"headers_too_large""#))
        #expect(try await connection.waitForClose())

        let manyFields = (0..<10_000).map { ("X-Field-\($0)", "v") }
        let crowded = try await harness.client.exchange([Array(RawConnection.head("POST", "/webhooks/iaptic?x=1", manyFields).utf8)])
        #expect(crowded.status == 431)
        #expect(crowded.body.contains("headers_too_large"))

        // The label is the sender the path names, as for every rejection; "none" for other paths.
        let elsewhere = try await harness.client.exchange([Array(RawConnection.head("GET", "/nowhere", manyFields).utf8)])
        #expect(elsewhere.status == 431)
        #expect(try await Self.rejections(harness, "iaptic", "headers_too_large") == 2)
        #expect(try await Self.rejections(harness, "none", "headers_too_large") == 1)
        #expect(try await harness.metric("tollgate_http_requests_total", ["route": "unmatched", "status": "431"]) == 3)
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        await harness.stop()
    }

    @Test("a request head that is not HTTP gets JSON 400 malformed_request instead of a bare 400")
    func malformedHead() async throws {
        let harness = try await GatewayHarness()
        let response = try await harness.client.exchange([Array("GET /healthz HTTP/1.1\r\nBad Header Name: x\r\n\r\n".utf8)])
        #expect(response.status == 400)
        #expect(response.body.contains(#""error":"malformed_request""#))
        #expect(try await Self.rejections(harness, "none", "malformed_request") == 1)
        await harness.stop()
    }

    @Test("a head trickled byte by byte is cut off at http.headerTimeoutMs after its first byte with 408 request_timeout")
    func slowLorisHead() async throws {
        let harness = try await GatewayHarness { _ in } configureHTTP: { $0.headerTimeoutMs = 1_000 }
        let connection = try RawConnection(port: harness.port)
        let head = RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("X-Slow", String(repeating: "s", count: 400))])
        let started = ContinuousClock.now
        // The request line at once (so the sender is known), then the rest a byte every 50 ms, which
        // would take over 20 s: bytes keep arriving, so only the head deadline can end it.
        let lineEnd = try #require(head.firstRange(of: "\r\n")).upperBound
        await connection.send(String(head[..<lineEnd]))
        let response = try #require(try await connection.trickle(Array(head[lineEnd...].utf8), interval: .milliseconds(50)))
        #expect(ContinuousClock.now - started >= .seconds(1))
        #expect(response.status == 408)
        #expect(response.headers["connection"] == "close")
        #expect(response.body.contains(#""error":"request_timeout""#))
        #expect(try await connection.waitForClose())
        #expect(try await Self.rejections(harness, "iaptic", "request_timeout") == 1)
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        await harness.stop()
    }

    @Test("a keep-alive connection idle for longer than the head deadline still serves its next request")
    func keepAliveOutlivesHeadDeadline() async throws {
        let harness = try await GatewayHarness { _ in } configureHTTP: { $0.headerTimeoutMs = 1_000 }
        let connection = try RawConnection(port: harness.port)
        let body = Bodies.renewal()
        let request = RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("Content-Length", String(body.utf8.count))]) + body
        await connection.send(request)
        #expect(try await connection.readResponse()?.status == 200)
        try await Task.sleep(for: .milliseconds(1_500))
        await connection.send(request)
        #expect(try await connection.readResponse()?.status == 200)
        #expect(try await harness.metric("tollgate_rejections_total", [:]) == 0)
        await harness.stop()
    }

    @Test("a body that stops mid-way, the client silent, gets 408 body_timeout at http.bodyTimeoutMs and the connection closes")
    func stalledBody() async throws {
        let harness = try await GatewayHarness { _ in } configureHTTP: { $0.bodyTimeoutMs = 1_000 }
        let body = Bodies.renewal()
        let connection = try RawConnection(port: harness.port)
        await connection.send(RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("Content-Length", String(body.utf8.count))])
                              + String(body.prefix(40)))
        let response = try #require(try await connection.readResponse())
        #expect(response.status == 408)
        #expect(response.headers["connection"] == "close")
        #expect(response.body.contains(#""error":"body_timeout""#))
        #expect(try await connection.waitForClose())

        // A body trickled slower than the deadline allows ends the same way.
        let trickler = try RawConnection(port: harness.port)
        await trickler.send(RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("Content-Length", String(body.utf8.count))]))
        let trickled = try #require(try await trickler.trickle(Array(body.utf8), interval: .milliseconds(50)))
        #expect(trickled.status == 408)

        #expect(try await Self.rejections(harness, "iaptic", "body_timeout") == 2)
        #expect(try await eventually { try await harness.metric("tollgate_http_in_flight", ["source": "iaptic"]) == 0 })
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        await harness.stop()
    }

    @Test("a client that hangs up mid-body is counted as unreadable_body, gets no 5xx, and the gateway carries on")
    func hangUpMidBody() async throws {
        let harness = try await GatewayHarness()
        let body = Bodies.renewal()
        let connection = try RawConnection(port: harness.port)
        await connection.send(RawConnection.head("POST", "/webhooks/iaptic", [Self.json, ("Content-Length", String(body.utf8.count))])
                              + String(body.prefix(40)))
        #expect(try await eventually { try await harness.metric("tollgate_http_in_flight", ["source": "iaptic"]) == 1 })
        connection.close()

        #expect(try await eventually { try await Self.rejections(harness, "iaptic", "unreadable_body") == 1 })
        #expect(try await eventually { try await harness.metric("tollgate_http_in_flight", ["source": "iaptic"]) == 0 })
        #expect(try await harness.postIaptic(Bodies.renewal()).status == 200)
        for status in ["500", "502", "503", "504"] {
            #expect(try await harness.metric("tollgate_http_requests_total", ["status": status]) == 0)
        }
        await harness.stop()
    }
}
