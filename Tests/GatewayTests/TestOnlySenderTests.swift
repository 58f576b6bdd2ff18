import Config
import Events
import Foundation
import Gateway
import Rejections
import Testing
import Toolkit
import Verifiers

/// A sender that exists only in this file, registered through `SenderCatalog` like the shipped ones:
/// a shared secret in `X-Probe-Secret`, a JSON body `{"id", "user"}`, a trace header kept for replay.
/// Nothing outside this file names it, which is what "a sender is one folder" promises.
enum ProbeSender: SenderDefinition {
    static let name = SourceName("probe")

    struct Settings: Sendable {
        var secrets: [String] = []
        /// Stands for a check that needs the network, which offline use must turn off.
        var onlineChecks = false
    }

    static func readSettings(_ section: ConfigReader) throws(ConfigError) -> Settings {
        var settings = Settings()
        settings.secrets = try section.strings("secrets")
        settings.onlineChecks = try section.bool("onlineChecks", default: false)
        return settings
    }

    static func makeSource(_ settings: Settings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        ProbeSource(settings: settings)
    }

    static let routesAccounts = true
    static let keptRequestHeaders = ["x-probe-trace"]

    static func startupWarnings(_ settings: Settings) -> [StartupWarning] {
        settings.secrets.isEmpty ? [StartupWarning(.gateway, key: "sources.probe.secrets", "no probe secrets")] : []
    }

    static func offlineSettings(_ settings: Settings) throws(OfflineRefusal) -> Settings {
        var offline = settings
        offline.onlineChecks = false
        return offline
    }
}

struct ProbeSource: WebhookSource {
    let name = ProbeSender.name
    let mediaTypes: [MediaType] = [.json]
    let settings: ProbeSender.Settings

    func accept(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        guard let secret = try request.singleHeader("x-probe-secret") else { throw Rejection(.missingPassword, "X-Probe-Secret is missing") }
        guard ConstantTime.firstMatch(secret, in: settings.secrets) != nil else { throw Rejection(.wrongPassword, "X-Probe-Secret matches no secret") }
        return try reverify(request)
    }

    /// The secret never reaches the raw topic, so replay checks the body alone.
    func reverify(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        guard let body = JSONValue.parse(request.body)?.object else { throw Rejection(.malformedJSON, "the body is not a JSON object") }
        guard let id = body["id"]?.string, !id.isEmpty else { throw Rejection(.missingField, "id is missing") }
        let environment: NormalizedEvent.Environment = settings.onlineChecks ? .production : .sandbox
        let event = NormalizedEvent(id: "probe:\(id)", type: .subscriptionRenewed, source: "/probe/\(request.path.split(separator: "/").last ?? "")",
                                    environment: environment, app: "probe", subject: "probe:\(id)", occurredAt: request.receivedAt.rfc3339,
                                    receivedAt: request.receivedAt.rfc3339, user: body["user"]?.string, sourceType: "probe")
        return AcceptedDelivery(events: [event], rawKey: event.subject, response: .text("probed"))
    }
}

@Suite("A sender defined only in the tests gets route, configuration, raw topic, verify and replay")
struct TestOnlySenderTests {
    static let catalog = SenderCatalog.standard.adding([ProbeSender.self])

    @Test("its section sources.probe is read, checked for unknown keys and overridden from the environment")
    func configuration() throws {
        let config = try Self.catalog.parseConfig(yaml: "sources:\n  probe: { secrets: [s3cret-one] }\nlimits: { rates: { probe: { perSecond: 5 } } }\n",
                                                  environment: ["TOLLGATE_SOURCES_PROBE_ONLINE_CHECKS": "true"])
        let settings = try #require(config.sources.settings(ProbeSender.name, as: ProbeSender.Settings.self))
        #expect(settings.secrets == ["s3cret-one"])
        #expect(settings.onlineChecks)
        #expect(config.limits.rates[ProbeSender.name]?.perSecond == 5)
        #expect(config.topicNames.raw(ProbeSender.name) == "tollgate.raw.probe")
        #expect(config.topicNames.all.map(\.name).contains("tollgate.raw.probe"))
        #expect(Self.catalog.startupWarnings(SourcesSettings(), process: .gateway).map(\.key).contains("sources.probe.secrets"))

        #expect(throws: ConfigError.self) { try Self.catalog.parseConfig(yaml: "sources: { probe: { secret: x } }") }
        do {
            _ = try Self.catalog.parseConfig(yaml: "sources: { probe: { secret: x } }")
        } catch {
            #expect(error.key == "sources.probe.secret")
        }
        // The shipped catalog does not know it: the same section is an unknown key there.
        #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: "sources: { probe: { secrets: [a] } }") }
    }

    @Test("the gateway routes it, keeps its headers on its raw topic, labels its refusals, and replay reads the record back")
    func gatewayAndReplay() async throws {
        let harness = try await GatewayHarness(configure: { sources in
            sources.set(ProbeSender.Settings(secrets: ["s3cret-one"], onlineChecks: true), for: ProbeSender.name)
        }, senders: Self.catalog)
        let body = #"{"id":"p-1","user":"u-7"}"#
        let accepted = try await harness.client.request("POST", "/webhooks/probe/acct",
                                                        headers: ["Content-Type": "application/json", "X-Probe-Secret": "s3cret-one",
                                                                  "X-Probe-Trace": "trace-9"], body: body)
        #expect(accepted.status == 200)
        #expect(accepted.body == "probed")

        let raw = try await harness.records(harness.topics.raw(ProbeSender.name))
        let record = try #require(raw.first)
        #expect(raw.count == 1)
        #expect(record.value == body)
        #expect(record.headers.contains("http_x-probe-trace=trace-9"))
        #expect(!record.headers.contains("s3cret"), "the secret never reaches the raw topic")
        #expect(try await harness.records(harness.topics.events).count == 1)

        let refused = try await harness.client.request("POST", "/webhooks/probe", headers: ["Content-Type": "application/json", "X-Probe-Secret": "wrong"],
                                                       body: body)
        #expect(refused.status == 401)
        #expect(refused.body.contains(#""error":"wrong_password""#))
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "probe", "reason": "wrong_password"]) == 1)
        let wrongMethod = try await harness.client.request("GET", "/webhooks/probe")
        #expect(wrongMethod.status == 405)

        // `tollgate replay`: the raw record read back into the request the gateway received, verified offline.
        let headers: [(name: String, value: String?)] = record.headers.split(separator: ",").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }
        let request = RawDeliveryHeaders.request(body: Array(record.value.utf8), headers: headers, timestampMs: nil, source: ProbeSender.name)
        #expect(request.path == "/webhooks/probe/acct")
        #expect(request.headers["x-probe-trace"] == "trace-9")
        let config = try Self.catalog.parseConfig(yaml: "sources: { probe: { secrets: [s3cret-one], onlineChecks: true } }")
        let offline = try Self.catalog.offlineSource(named: "probe", settings: config.sources)
        let replayed = try await offline.reverify(request)
        #expect(replayed.events.map { $0.id } == ["probe:p-1"])
        #expect(replayed.events.first?.environment == .sandbox, "offline settings turned the online check off")
        await harness.stop()
    }

    @Test("`tollgate verify`'s lookup finds it by name, refuses unknown names, and checks a captured delivery offline")
    func verify() async throws {
        let config = try Self.catalog.parseConfig(yaml: "sources: { probe: { secrets: [s3cret-one] } }")
        let sender = try Self.catalog.offlineSource(named: "probe", settings: config.sources)
        var headers = HeaderFields()
        headers.append(name: "Content-Type", value: "application/json")
        headers.append(name: "X-Probe-Secret", value: "s3cret-one")
        let delivery = try await sender.handle(WebhookRequest(path: "/webhooks/probe", headers: headers, body: Array(#"{"id":"p-2"}"#.utf8),
                                                              receivedAt: Timestamp(millisecondsSince1970: 0)))
        #expect(delivery.events.map(\.id) == ["probe:p-2"])
        #expect(throws: OfflineSourceError.self) { try Self.catalog.offlineSource(named: "nosuch", settings: config.sources) }
        #expect(throws: OfflineSourceError.self) { try SenderCatalog.standard.offlineSource(named: "probe", settings: config.sources) }
    }
}
