import Foundation
import Logging
import Outbound
import Prometheus
import ServiceHost
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// The App Store Server API client against a local Apple: the JWT Apple checks, the paths and bodies
/// it sends, production then sandbox, Apple's error codes, 429 and `Retry-After`, timeouts.
@Suite("App Store Server API client")
struct AppStoreAPIClientTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let bundleId = "com.example.tollgate"

    struct Harness {
        let fake: FakeAppStoreAPI
        let client: AppStoreAPIClient
        let clock: TestClock
        let registry: PrometheusCollectorRegistry

        func stop() { fake.stop() }
    }

    static func start(timeout: Duration = .seconds(5), clientKey: PrivateKey? = nil) throws -> Harness {
        let key = try #require(PrivateKey.generateP256())
        let clock = TestClock()
        let fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: issuerId, keyId: keyId, bundleId: bundleId,
                                   now: { clock.now })
        let credentials = try AppStoreAPICredentials(issuerId: issuerId, keyId: keyId, bundleId: bundleId, privateKey: clientKey ?? key)
        let registry = PrometheusCollectorRegistry()
        var logger = Logger(label: "app-store-api-test")
        logger.logLevel = .critical
        let client = AppStoreAPIClient(credentials: credentials, baseURLs: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
                                       fetcher: HTTPClientFetcher(), timeout: timeout, logger: logger,
                                       metricsFactory: PrometheusFamiliesFactory(registry: registry, families: ProviderAPIMetrics.families),
                                       now: { clock.now })
        return Harness(fake: fake, client: client, clock: clock, registry: registry)
    }

    @Test("Get Transaction Info: the documented path, Apple's JWT, the signed transaction as received")
    func transactionInfo() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"signedTransactionInfo":"eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMTAwMCJ9.c2ln"}"#,
                     at: "/production/inApps/v1/transactions/1000")
        let answer = try await h.client.transactionInfo("1000", in: .production)
        #expect(answer.signedTransactionInfo == "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMTAwMCJ9.c2ln")
        #expect(h.fake.jwtProblems.isEmpty)
        #expect(h.fake.requests.map(\.method) == ["GET"])
    }

    @Test("one JWT serves calls until five minutes before it expires, then a new one is signed")
    func tokenReuse() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"signedTransactionInfo":"a.b.c"}"#, at: "/production/inApps/v1/transactions/1")
        _ = try await h.client.transactionInfo("1", in: .production)
        h.clock.advance(seconds: 24 * 60)
        _ = try await h.client.transactionInfo("1", in: .production)
        h.clock.advance(seconds: 2 * 60)
        _ = try await h.client.transactionInfo("1", in: .production)
        let tokens = h.fake.requests.map(\.token)
        #expect(tokens.count == 3)
        #expect(tokens[0] == tokens[1])
        #expect(tokens[2] != tokens[1])
        #expect(h.fake.jwtProblems.isEmpty)
        let claims = try #require(JSONValue.parse(try CompactJWS(tokens[0]).payload))
        #expect((claims["exp"]?.int64 ?? 0) - (claims["iat"]?.int64 ?? 0) == 30 * 60)
    }

    @Test("the fake refuses what Apple refuses: a token past its exp on Apple's clock, and one issued in its future, each 401 with no body")
    func fakeChecksTheClock() async throws {
        let key = try #require(PrivateKey.generateP256())
        let apple = TestClock()
        let fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId,
                                   now: { apple.now })
        defer { fake.stop() }
        fake.store(#"{"signedTransactionInfo":"a.b.c"}"#, at: "/production/inApps/v1/transactions/1")
        let credentials = try AppStoreAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId, privateKey: key)
        var logger = Logger(label: "app-store-fake-test")
        logger.logLevel = .critical
        func client(skewSeconds: TimeInterval) -> AppStoreAPIClient {
            AppStoreAPIClient(credentials: credentials, baseURLs: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
                              fetcher: HTTPClientFetcher(), timeout: .seconds(5), logger: logger, now: { apple.now.addingTimeInterval(skewSeconds) })
        }
        // A client two hours slow signs tokens that expired on Apple's clock; two hours fast, tokens from its future.
        for (skew, problem) in [(-7_200.0, "expired"), (7_200.0, "issued")] {
            await #expect(throws: AppStoreAPIError.self) { _ = try await client(skewSeconds: skew).transactionInfo("1", in: .production) }
            #expect(fake.jwtProblems.last?.hasPrefix(problem) == true, "\(fake.jwtProblems)")
        }
        let refused = fake.jwtProblems.count
        _ = try await client(skewSeconds: 0).transactionInfo("1", in: .production)
        #expect(fake.jwtProblems.count == refused, "a token on Apple's time is taken")
    }

    @Test("production first; Apple's not-found there asks sandbox")
    func productionThenSandbox() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"signedTransactionInfo":"sandbox.jws.value"}"#, at: "/sandbox/inApps/v1/transactions/2000")
        let (answer, environment) = try await h.client.productionThenSandbox { (environment) async throws(AppStoreAPIError) in
            try await h.client.transactionInfo("2000", in: environment)
        }
        #expect(environment == .sandbox)
        #expect(answer.signedTransactionInfo == "sandbox.jws.value")
        #expect(h.fake.requests.map(\.target) == ["/production/inApps/v1/transactions/2000", "/sandbox/inApps/v1/transactions/2000"])
    }

    @Test("an error other than not-found in production is not retried in sandbox")
    func noSandboxOnOtherErrors() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.script("/production/inApps/v1/transactions/3000",
                      .json(400, #"{"errorCode":4000006,"errorMessage":"Invalid transaction id."}"#))
        await #expect(throws: AppStoreAPIError.self) {
            _ = try await h.client.productionThenSandbox { (environment) async throws(AppStoreAPIError) in
                try await h.client.transactionInfo("3000", in: environment)
            }
        }
        #expect(h.fake.requests.count == 1)
    }

    @Test("Apple's error codes are typed, with what they mean for a retry")
    func errorCodes() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.script("/production/inApps/v1/transactions/4", .json(400, #"{"errorCode":4000006,"errorMessage":"Invalid transaction id."}"#))
        h.fake.script("/production/inApps/v1/transactions/5", .json(500, #"{"errorCode":5000001,"errorMessage":"An unknown error occurred. Please try again."}"#))
        h.fake.script("/production/inApps/v1/transactions/6", .json(404, #"{"errorCode":4040001,"errorMessage":"Account not found."}"#))
        do {
            _ = try await h.client.transactionInfo("4", in: .production)
            Issue.record("an invalid transaction id answered")
        } catch {
            #expect(error.kind == .http(status: 400, code: .invalidTransactionId))
            #expect(!error.isTransient && !error.isNotFound)
            #expect(error.message.contains("4000006"))
        }
        do {
            _ = try await h.client.transactionInfo("5", in: .production)
            Issue.record("a 500 answered")
        } catch {
            #expect(error.kind == .http(status: 500, code: .generalInternalRetryable))
            #expect(error.isTransient)
        }
        do {
            _ = try await h.client.transactionInfo("6", in: .production)
            Issue.record("a 404 answered")
        } catch {
            #expect(error.kind == .http(status: 404, code: .accountNotFound))
            #expect(!error.isNotFound)
        }
        do {
            _ = try await h.client.transactionInfo("7", in: .production)
            Issue.record("an unknown id answered")
        } catch {
            #expect(error.isNotFound)
        }
        let text = h.registry.emitToString()
        #expect(text.contains(#"tollgate_app_store_api_errors_total{call="transaction_info",kind="http_400"} 1"#))
        #expect(text.contains(#"tollgate_app_store_api_errors_total{call="transaction_info",kind="http_404"} 2"#))
    }

    @Test("429 says when to retry: Retry-After in seconds, else a minute")
    func rateLimited() async throws {
        let h = try Self.start()
        defer { h.stop() }
        let limited = #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#
        h.fake.script("/production/inApps/v1/transactions/8",
                      LoopbackHTTPServer.Reply(status: 429, headers: [("Retry-After", "7"), ("Content-Type", "application/json")], body: Array(limited.utf8)),
                      .json(429, limited))
        for expected in [7, 60] {
            do {
                _ = try await h.client.transactionInfo("8", in: .production)
                Issue.record("a 429 answered")
            } catch {
                #expect(error.kind == .rateLimited(retryAfterSeconds: expected))
                #expect(error.isTransient)
            }
        }
        #expect(h.fake.requests.count == 2)
    }

    @Test("a refused JWT is signed anew once; a second refusal is the error: the key refused, permanent")
    func unauthorized() async throws {
        let h = try Self.start(clientKey: PrivateKey.generateP256())
        defer { h.stop() }
        do {
            _ = try await h.client.transactionInfo("9", in: .production)
            Issue.record("a JWT signed with another key was accepted")
        } catch {
            #expect(error.kind == .http(status: 401, code: nil))
            #expect(!error.isTransient && error.isKeyRefused)
            #expect(error.description.contains("(http_401, permanent)"))
        }
        #expect(h.fake.requests.count == 2)
        #expect(h.fake.jwtProblems == ["signature", "signature"])
    }

    @Test("no answer within the timeout is a transient timeout")
    func timeout() async throws {
        let h = try Self.start(timeout: .milliseconds(300))
        defer { h.stop() }
        h.fake.script("/production/inApps/v1/transactions/10", nil)
        do {
            _ = try await h.client.transactionInfo("10", in: .production)
            Issue.record("a hung request answered")
        } catch {
            #expect(error.kind == .timeout)
            #expect(error.isTransient)
        }
    }

    @Test("a 2xx that is not the documented JSON is a decode error")
    func decodeError() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"unexpected":true}"#, at: "/production/inApps/v1/transactions/11")
        do {
            _ = try await h.client.transactionInfo("11", in: .production)
            Issue.record("an undocumented answer decoded")
        } catch {
            #expect(error.kind == .decode)
            #expect(!error.isTransient)
        }
    }

    @Test("Get Notification History: POSTs the request, then follows paginationToken with the same body")
    func notificationHistory() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"hasMore":true,"paginationToken":"page 2/x","notificationHistory":[{"signedPayload":"a.b.c","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"NO_RESPONSE"}]}]}"#,
                     at: "/sandbox/inApps/v1/notifications/history")
        h.fake.store(#"{"hasMore":false,"notificationHistory":[{"signedPayload":"d.e.f"}]}"#,
                     at: "/sandbox/inApps/v1/notifications/history?paginationToken=page%202%2Fx")
        let request = NotificationHistoryRequest(startDate: 1_698_148_800_000, endDate: 1_698_235_200_000, onlyFailures: true)
        let first = try await h.client.notificationHistory(request, in: .sandbox)
        #expect(first.hasMore == true)
        #expect(first.notificationHistory?.first?.sendAttempts?.first?.sendAttemptResult == "NO_RESPONSE")
        let second = try await h.client.notificationHistory(request, paginationToken: first.paginationToken, in: .sandbox)
        #expect(second.hasMore == false && second.notificationHistory?.first?.signedPayload == "d.e.f")
        let bodies = h.fake.requests.map { JSONValue.parse($0.body) }
        #expect(h.fake.requests.map(\.method) == ["POST", "POST"])
        #expect(bodies[0] == bodies[1])
        #expect(bodies[0]?["startDate"]?.int64 == 1_698_148_800_000 && bodies[0]?["onlyFailures"] == .bool(true))
    }

    @Test("Send Consumption Information: PUTs the ConsumptionRequest to the v2 path; 202 with no body is success, 400 a permanent error")
    func sendConsumptionInformation() async throws {
        let h = try Self.start()
        defer { h.stop() }
        let target = "/sandbox/inApps/v2/transactions/consumption/2000000111"
        h.fake.script(target, LoopbackHTTPServer.Reply(status: 202, body: []),
                      .json(400, #"{"errorCode":4000000,"errorMessage":"Invalid request."}"#))
        let request = ConsumptionRequest(customerConsented: true, deliveryStatus: .undeliveredOther, sampleContentProvided: false,
                                         consumptionPercentage: 0)
        try await h.client.sendConsumptionInformation("2000000111", request, in: .sandbox)
        do {
            try await h.client.sendConsumptionInformation("2000000111", request, in: .sandbox)
            Issue.record("a 400 must fail the call")
        } catch {
            #expect(!error.isTransient)
            #expect(error.kindLabel == "http_400" && error.call == .sendConsumptionInformation)
        }
        #expect(h.fake.requests.map(\.method) == ["PUT", "PUT"])
        #expect(h.fake.requests.first?.target == target)
        #expect(h.fake.jwtProblems.isEmpty)
        // Absent optionals are left out, not sent as null: Apple refuses unknown values.
        let body = try #require(h.fake.requests.first.flatMap { JSONValue.parse($0.body)?.object })
        #expect(Set(body.keys) == ["customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage"])
        #expect(body["customerConsented"] == .bool(true) && body["sampleContentProvided"] == .bool(false))
        #expect(body["deliveryStatus"]?.string == "UNDELIVERED_OTHER" && body["consumptionPercentage"]?.int64 == 0)
    }

    @Test("history, statuses and test notifications decode Apple's documented answers")
    func otherEndpoints() async throws {
        let h = try Self.start()
        defer { h.stop() }
        h.fake.store(#"{"revision":"1698148900000_1000","bundleId":"com.example.tollgate","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["t.1.x","t.2.x"]}"#,
                     at: "/production/inApps/v2/history/1000")
        h.fake.store(#"{"environment":"Production","bundleId":"com.example.tollgate","appAppleId":1234,"data":[{"subscriptionGroupIdentifier":"sub_group_one","lastTransactions":[{"status":1,"originalTransactionId":"1000","signedTransactionInfo":"t.1.x","signedRenewalInfo":"r.1.x"}]}]}"#,
                     at: "/production/inApps/v1/subscriptions/1000")
        h.fake.store(#"{"testNotificationToken":"ce3af791-365e-4c60-841b-1674b43c1609_1698148900000"}"#,
                     at: "/production/inApps/v1/notifications/test")
        h.fake.store(#"{"signedPayload":"n.1.x","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"SUCCESS"}]}"#,
                     at: "/production/inApps/v1/notifications/test/ce3af791-365e-4c60-841b-1674b43c1609_1698148900000")
        let history = try await h.client.transactionHistory("1000", in: .production)
        #expect(history.signedTransactions == ["t.1.x", "t.2.x"] && history.revision == "1698148900000_1000")
        let statuses = try await h.client.subscriptionStatuses("1000", in: .production)
        #expect(statuses.data?.first?.lastTransactions?.first?.signedRenewalInfo == "r.1.x")
        let requested = try await h.client.requestTestNotification(in: .production)
        let status = try await h.client.testNotificationStatus(requested.testNotificationToken, in: .production)
        #expect(status.sendAttempts?.first?.sendAttemptResult == "SUCCESS")
        #expect(h.fake.requests.map(\.method) == ["GET", "GET", "POST", "GET"])
        #expect(h.fake.jwtProblems.isEmpty)
    }

    @Test("credentials take a P-256 key only, and never show it")
    func credentials() throws {
        let rsa = try #require(PrivateKey.generateRSA())
        #expect(throws: AppStoreCredentialsError.self) {
            _ = try AppStoreAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId, privateKey: rsa)
        }
        let key = try #require(PrivateKey.generateP256())
        let credentials = try AppStoreAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId, privateKey: key)
        let pem = try #require(key.pem)
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        #expect(!String(describing: credentials).contains(body))
        #expect(String(describing: credentials) == "App Store Server API key 2X9R4HXF34 for com.example.tollgate")
    }
}

@Suite("App Store Server API clients from the configuration")
struct AppStoreAPIClientsTests {
    @Test("one client per app with a key; an unreadable or non-P-256 key names the app and the file")
    func make() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-asapi-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let p8 = directory.appendingPathComponent("SubscriptionKey_2X9R4HXF34.p8").path
        let rsa = directory.appendingPathComponent("rsa.pem").path
        try #require(PrivateKey.generateP256()?.pem).write(toFile: p8, atomically: true, encoding: .utf8)
        try #require(PrivateKey.generateRSA()?.pem).write(toFile: rsa, atomically: true, encoding: .utf8)

        var settings = AppleSettings()
        var keyed = AppleSettings.App(bundleId: "com.example.keyed", appAppleId: 1, environments: ["Production"])
        keyed.serverAPI = .init(issuerId: AppStoreAPIClientTests.issuerId, keyId: "2X9R4HXF34", privateKeyFile: p8)
        settings.apps = [keyed, AppleSettings.App(bundleId: "com.example.plain", appAppleId: 2, environments: ["Production"])]
        let logger = Logger(label: "test")
        let clients = try AppStoreAPIClients.make(settings: settings, fetcher: HTTPClientFetcher(), logger: logger)
        #expect(Array(clients.keys) == ["com.example.keyed"])
        #expect(clients["com.example.keyed"]?.credentials.bundleId == "com.example.keyed")

        for path in [rsa, directory.appendingPathComponent("missing.p8").path] {
            settings.apps[0].serverAPI?.privateKeyFile = path
            do {
                _ = try AppStoreAPIClients.make(settings: settings, fetcher: HTTPClientFetcher(), logger: logger)
                Issue.record("\(path) was accepted")
            } catch {
                #expect(error.message.contains("com.example.keyed") && error.message.contains(path))
            }
        }
    }
}

@Suite("Outbound HTTP does not follow redirects")
struct OutboundRedirectTests {
    @Test("a 3xx is the answer: the bearer token never follows it to another URL")
    func redirectNotFollowed() async throws {
        let followed = FollowedBox()
        let server = LoopbackHTTPServer { request in
            if request.target == "/elsewhere" {
                followed.mark(request.header("Authorization"))
                return .json(200, "{}")
            }
            return LoopbackHTTPServer.Reply(status: 302, headers: [("Location", "/elsewhere")], body: [])
        }
        defer { server.stop() }
        let response = try await HTTPClientFetcher().fetch(HTTPFetchRequest(url: server.baseURL + "/start",
                                                                            headers: [("Authorization", "Bearer secret-token")],
                                                                            timeout: .seconds(5)))
        #expect(response.status == 302)
        #expect(followed.value == nil)
    }

    final class FollowedBox: @unchecked Sendable {
        private let lock = NSLock()
        private var header: String??
        func mark(_ value: String?) { lock.withLock { header = .some(value) } }
        var value: String?? { lock.withLock { header } }
    }
}

@Suite("App Store Server API keys: P-256 only")
struct AppStoreKeyCurveTests {
    @Test("a 256-bit key on another curve (secp256k1) is not an In-App Purchase key")
    func otherCurve() async throws {
        let generated = try await Subprocess.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1"])
        let key = try #require(PrivateKey(pem: generated.output))
        #expect(key.bits == 256)
        #expect(!key.isP256)
        #expect(try #require(PrivateKey.generateP256()).isP256)
    }
}
