import ArgumentParser
import Config
import Events
import Foundation
import Kafka
import Logging
import Merchant
import Outbound
import ProviderAPIs
import Toolkit
import Verifiers
import Workers

struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Ask the App Store Server API (an app's sources.apple.apps[].serverApi key).",
        subcommands: [AppleTestNotification.self])
}

/// Request a Test Notification, then follow it to `tollgate.events`: the one check that Apple's
/// notification URL, the network in between and this gateway's verification all work together.
struct AppleTestNotification: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Have Apple send a test notification and wait until it is on tollgate.events.",
        discussion: """
            Three steps, each reported as it completes: Apple takes the request (Request a Test Notification); \
            Apple delivers it to the app's notification URL (Get Test Notification Status reports SUCCESS); the \
            gateway publishes it to tollgate.events (its ce_id is found there). Exit 0 when all three hold, 1 \
            naming the step that failed and why, 2 on usage or configuration errors.
            """)

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "The app's bundle id (default: the only app with a serverApi key).") var app: String?
    @Option(help: "Production or Sandbox (default: Production when the app enables it, else Sandbox).") var environment: String?
    @Option(help: "Seconds to wait for Apple's delivery, and again for the event.") var timeout = 60

    func validate() throws {
        if let environment, AppStoreEnvironment(rawValue: environment) == nil {
            throw ValidationError("--environment must be Production or Sandbox, got '\(environment)'")
        }
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be 1 to 3600 seconds") }
    }

    func run() async throws {
        let (config, kafka) = try cluster.load()
        let (client, appSettings) = try Self.client(config.sources.apple, app: app)
        let environment = self.environment.flatMap(AppStoreEnvironment.init(rawValue:))
            ?? (appSettings.environments.contains("Production") ? .production : .sandbox)
        let bundle = "\(appSettings.bundleId) (\(environment.rawValue))"

        let requested: TestNotificationRequested
        do {
            requested = try await client.requestTestNotification(in: environment)
        } catch {
            throw failure(step: 1, "Apple did not take the request for \(bundle): \(error.message)" + Self.hint(error))
        }
        Output.line("1/3 Apple took the request for \(bundle)")

        let status = try await waitForDelivery(client, token: requested.testNotificationToken, environment: environment, bundle: bundle)
        let eventId = try await Self.eventId(of: status.signedPayload ?? "", settings: config.sources)
        let attempt = status.sendAttempts?.last(where: { $0.sendAttemptResult == "SUCCESS" })?.attemptDate
        Output.line("2/3 Apple delivered it\(attempt.map { " at \(Timestamp(millisecondsSince1970: $0).rfc3339)" } ?? "") (ce_id \(eventId))")

        let topic = config.topicNames.events
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            let records = try await TopicScan.reported(client: kafka, topic: topic, sinceMs: Timestamp.now.millisecondsSince1970 - 3_600_000, reportGaps: false)
            if let record = records.first(where: { $0.headers.string("ce_id") == eventId }) {
                Output.line("3/3 the gateway published it to \(topic) (partition \(record.partition), offset \(record.offset))")
                return
            }
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .seconds(1))
        }
        throw failure(step: 3, """
            Apple delivered it, but no record with ce_id \(eventId) reached \(topic) within \(timeout) s: the notification \
            URL may point at another gateway or environment, or this gateway refused it \
            (tollgate_rejections_total{source="apple"} and its log say why)
            """)
    }

    /// Polls Get Test Notification Status until Apple reports a successful delivery.
    private func waitForDelivery(_ client: AppStoreAPIClient, token: String, environment: AppStoreEnvironment,
                                 bundle: String) async throws -> TestNotificationStatus {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var last: TestNotificationStatus?
        while ContinuousClock.now < deadline {
            do {
                let status = try await client.testNotificationStatus(token, in: environment)
                if status.sendAttempts?.contains(where: { $0.sendAttemptResult == "SUCCESS" }) == true { return status }
                last = status
            } catch where error.kind == .http(status: 404, code: .testNotificationNotFound) || error.isTransient {
                // Not sent yet, or a passing failure: ask again.
            } catch {
                throw failure(step: 2, "Apple's status of the test notification for \(bundle) is unavailable: \(error.message)")
            }
            try await Task.sleep(for: .seconds(1))
        }
        let results = last?.sendAttempts?.compactMap(\.sendAttemptResult) ?? []
        throw failure(step: 2, results.isEmpty
             ? "Apple had not tried to deliver it after \(timeout) s"
             : "Apple could not deliver it: \(results.joined(separator: ", ")). Check the \(environment.rawValue) server notification URL in App Store Connect (App Information), and that it reaches this gateway over TLS")
    }

    /// The client of `app`, or of the only app with a key.
    private static func client(_ settings: AppleSettings, app: String?) throws -> (AppStoreAPIClient, AppleSettings.App) {
        var logger = Logger(label: "tollgate.apple")
        logger.logLevel = .error
        let clients: [String: AppStoreAPIClient]
        do {
            clients = try AppStoreAPIClients.make(settings: settings, fetcher: HTTPClientFetcher(), logger: logger)
        } catch {
            Output.error("tollgate: configuration error: \(error.message)")
            throw ExitCode(2)
        }
        let keyed = settings.apps.filter { clients[$0.bundleId] != nil }
        let chosen = app.map { name in keyed.filter { $0.bundleId == name } } ?? keyed
        guard chosen.count == 1, let selected = chosen.first, let client = clients[selected.bundleId] else {
            let names = keyed.map(\.bundleId).joined(separator: ", ")
            Output.error(app == nil
                ? "tollgate: name the app with --app (apps with a serverApi key: \(names.isEmpty ? "none" : names))"
                : "tollgate: \(app ?? "") has no sources.apple.apps[].serverApi key (apps with one: \(names.isEmpty ? "none" : names))")
            throw ExitCode(2)
        }
        return (client, selected)
    }

    /// The ce_id the gateway gives this notification: verified and normalized offline, as `tollgate verify` does.
    private static func eventId(of signedPayload: String, settings: SourcesSettings) async throws -> String {
        let source: any WebhookSource
        do {
            source = try SenderCatalog.standard.offlineSource(named: SourceName.apple.rawValue, settings: settings)
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
        let body = Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
        let request = WebhookRequest(path: "/webhooks/apple", headers: HeaderFields([("Content-Type", "application/json")]),
                                     body: body, receivedAt: Timestamp.now)
        let delivery: AcceptedDelivery
        do {
            delivery = try await source.handle(request)
        } catch {
            throw failure(step: 2, "the notification Apple returned does not verify here (\(error.code): \(error.message)): the gateway would refuse it too")
        }
        guard let id = delivery.events.first?.id else { throw failure(step: 2, "the notification Apple returned gives no event") }
        return id
    }

    private static func hint(_ error: AppStoreAPIError) -> String {
        switch error.kind {
        case .http(401, _): "; check the key's issuer id, key id and .p8 (App Store Connect, Users and Access, Integrations)"
        case .http(404, .serverNotificationURLNotFound?): "; set the server notification URL in App Store Connect first"
        case .rateLimited(let seconds): "; try again in \(seconds) s"
        default: ""
        }
    }
}

/// Prints why a step failed; the command exits 1.
private func failure(step: Int, _ message: String) -> ExitCode {
    Output.error("\(step)/3 failed: \(message)")
    return ExitCode(1)
}
