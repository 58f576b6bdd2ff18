import ArgumentParser
import Config
import Entitlements
import Events
import Foundation
import Kafka
import Logging
import Merchant
import Outbound
import ProviderAPIs
import Verifiers

struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Recover what the gateway missed from the stores' own records (docs/reconciliation.md).",
        subcommands: [ReconcileApple.self, ReconcileGoogle.self])
}

/// The workers' Apple backfill, run by hand: Get Notification History, each notification verified as the
/// webhook verifies it and published to tollgate.events with the id it would have had.
struct ReconcileApple: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Read Apple's notification history back and publish what tollgate.events lacks.",
        discussion: """
            Per app with a sources.apple.apps[].serverApi key, in each environment it enables. Without --since or \
            --until it continues from the checkpoint in the store (store.url), as the workers' periodic job does, and \
            moves it; with them it reads that window (at most 180 days back in production, 30 in sandbox) and leaves \
            the checkpoint alone. Progress goes to stderr on a terminal, one summary line per app and environment \
            to stdout. Exit 0 when every one reached its end, 1 otherwise, 2 on usage or configuration errors.
            """)

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "Only this app's bundle id.") var app: String?
    @Option(help: "From this time: RFC 3339, or an age such as 24h, 7d.") var since: TimeArgument?
    @Option(help: "Until this time: RFC 3339, or an age (default: now).") var until: TimeArgument?
    @Flag(help: "Only notifications Apple failed to deliver.") var onlyFailures = false
    @Flag(help: "Read and verify, publish nothing, move no checkpoint.") var dryRun = false

    func validate() throws {
        if let since, let until, since.milliseconds >= until.milliseconds {
            throw ValidationError("--since must be before --until")
        }
    }

    func run() async throws {
        let (config, client) = try cluster.load()
        var logger = Logger(label: "tollgate.reconcile")
        logger.logLevel = .error
        let clients: [String: AppStoreAPIClient]
        let source: any WebhookSource
        do {
            clients = try AppStoreAPIClients.make(settings: config.sources.apple, fetcher: HTTPClientFetcher(), logger: logger)
            source = try SenderCatalog.standard.offlineSource(named: SourceName.apple.rawValue, settings: config.sources)
        } catch {
            Output.error("tollgate: configuration error: \(error)")
            throw ExitCode(2)
        }
        if let app, clients[app] == nil {
            let names = clients.keys.sorted().joined(separator: ", ")
            Output.error("tollgate: \(app) has no sources.apple.apps[].serverApi key (apps with one: \(names.isEmpty ? "none" : names))")
            throw ExitCode(2)
        }
        guard !clients.isEmpty else {
            Output.error("tollgate: no app has a sources.apple.apps[].serverApi key: Apple's history cannot be read")
            throw ExitCode(2)
        }
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        let producer = dryRun ? nil : try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let backfill = AppleNotificationBackfill(clients: clients, apps: config.sources.apple.apps, source: source, store: store,
                                                 publisher: producer.map { KafkaEventPublisher(producer: $0, topic: config.topicNames.events) },
                                                 firstRunDays: config.workers.reconcileAppleFirstRunDays,
                                                 metrics: MerchantMetrics(), logger: logger)
        let options = AppleNotificationBackfill.Options(apps: app.map { [$0] }, sinceMs: since?.milliseconds, untilMs: until?.milliseconds,
                                                        onlyFailures: onlyFailures, dryRun: dryRun)
        let onTerminal = isatty(STDERR_FILENO) == 1
        let results: [AppleNotificationBackfill.Progress]
        do {
            results = try await backfill.run(options, progress: { state in
                if onTerminal { Output.error("\(state.scope): \(Self.counts(state, of: "notifications"))") }
            })
        } catch {
            producer?.close()
            await store.close()
            Output.error("tollgate: reconcile apple failed: \(error)")
            throw ExitCode(1)
        }
        producer?.close()
        await store.close()
        for result in results {
            Output.line("\(result.scope): \(Self.counts(result, of: "notifications"))\(dryRun ? " (dry run: nothing published)" : "")"
                        + (result.failure.map { "; stopped: \($0)" } ?? ""))
        }
        if results.contains(where: { $0.failure != nil }) { throw ExitCode(1) }
    }

    static func counts(_ state: ReconcileProgress, of items: String) -> String {
        "\(state.pages) pages, \(state.items) \(items), \(state.new) new, \(state.known) known, \(state.rejected) rejected"
            + (state.rateLimitWaits > 0 ? ", \(state.rateLimitWaits) waits on 429" : "")
    }
}

/// The workers' Google voided purchases poll, run by hand.
struct ReconcileGoogle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google",
        abstract: "Read Google's voided purchases back and publish each as purchase.refunded or subscription.revoked.",
        discussion: """
            Per package of sources.google.packages, with sources.google.playApi's service account. Without --since it \
            continues from the checkpoint in the store (store.url), as the workers' job does, and moves it; with it it \
            reads from then (Google keeps 30 days) and leaves the checkpoint alone. Exit 0 when every package reached \
            its end, 1 otherwise, 2 on usage or configuration errors.
            """)

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "Only this package.") var package: String?
    @Option(help: "From this time: RFC 3339, or an age such as 24h, 7d (at most 30 days back).") var since: TimeArgument?
    @Flag(help: "Read, publish nothing, move no checkpoint.") var dryRun = false

    func run() async throws {
        let (config, client) = try cluster.load()
        var logger = Logger(label: "tollgate.reconcile")
        logger.logLevel = .error
        let packages = config.sources.google.packages
        if let package, !packages.contains(package) {
            Output.error("tollgate: \(package) is not in sources.google.packages (\(packages.isEmpty ? "none" : packages.joined(separator: ", ")))")
            throw ExitCode(2)
        }
        let enricher: GooglePlayEnricher?
        do {
            enricher = try GooglePlayEnricher(settings: config.sources.google.playApi, fetcher: HTTPClientFetcher(), logger: logger)
        } catch {
            Output.error("tollgate: configuration error: sources.google.playApi.credentialsFile: \(error)")
            throw ExitCode(2)
        }
        guard let playAPI = enricher?.playAPIClient, !packages.isEmpty else {
            Output.error("tollgate: Google's voided purchases need sources.google.packages and sources.google.playApi.credentialsFile")
            throw ExitCode(2)
        }
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        let producer = dryRun ? nil : try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let backfill = GoogleVoidedPurchasesBackfill(client: playAPI, packages: packages, store: store,
                                                     publisher: producer.map { KafkaEventPublisher(producer: $0, topic: config.topicNames.events) },
                                                     metrics: MerchantMetrics(), logger: logger)
        let onTerminal = isatty(STDERR_FILENO) == 1
        let results: [ReconcileProgress]
        do {
            results = try await backfill.run(.init(packages: package.map { [$0] }, sinceMs: since?.milliseconds, dryRun: dryRun), progress: { state in
                if onTerminal { Output.error("\(state.scope): \(ReconcileApple.counts(state, of: "voided purchases"))") }
            })
        } catch {
            producer?.close()
            await store.close()
            Output.error("tollgate: reconcile google failed: \(error)")
            throw ExitCode(1)
        }
        producer?.close()
        await store.close()
        for result in results {
            Output.line("\(result.scope): \(ReconcileApple.counts(result, of: "voided purchases"))\(dryRun ? " (dry run: nothing published)" : "")"
                        + (result.failure.map { "; stopped: \($0)" } ?? ""))
        }
        if results.contains(where: { $0.failure != nil }) { throw ExitCode(1) }
    }
}
