import ArgumentParser
import Config
import Entitlements
import Events
import Logging
import Merchant
import Webhooks

struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Outbound webhooks: endpoints, attempts, replays (docs/outbound-webhooks.md).",
        discussion: "Each reads the store (store.url) the workers record deliveries in; the endpoints come from webhooks.endpoints.",
        subcommands: [WebhooksList.self, WebhooksAttempts.self, WebhooksReplay.self, WebhooksEnable.self, WebhooksDisable.self])
}

/// What every webhooks command opens: the configuration's endpoints and the store.
struct WebhookOperator {
    let config: TollgateConfig
    let endpoints: [WebhookEndpoint]
    let entitlements: EntitlementStore
    let store: WebhookStore

    static func open(_ options: ConfigOptions) async throws -> WebhookOperator {
        let config = try options.load()
        let endpoints: [WebhookEndpoint]
        do {
            endpoints = try WebhookEndpoint.all(config.webhooks)
        } catch {
            // A ConfigError names itself ("configuration error: <key>: ...").
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
        var logger = Logger(label: "tollgate.webhooks")
        logger.logLevel = .error
        let entitlements = try await EntitlementStore.open(url: config.store.url, logger: logger)
        return WebhookOperator(config: config, endpoints: endpoints, entitlements: entitlements, store: WebhookStore(store: entitlements))
    }

    /// The endpoint called `name`, or exit 2 naming the ones there are.
    func endpoint(_ name: String) throws -> WebhookEndpoint {
        guard let endpoint = endpoints.first(where: { $0.name == name }) else {
            let names = endpoints.map(\.name).joined(separator: ", ")
            Output.error("tollgate: no endpoint \(name) in webhooks.endpoints (there are: \(names.isEmpty ? "none" : names))")
            throw ExitCode(2)
        }
        return endpoint
    }

    func messages(for endpoint: WebhookEndpoint, sinceMs: Int64, purchaseId: String?, messageId: String?) async throws -> [WebhookMessage] {
        try await store.messages(for: endpoint, sinceMs: sinceMs, purchaseId: purchaseId, messageId: messageId, ids: entitlements.purchaseIds)
    }

    func close() async { await entitlements.close() }
}

struct WebhooksList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Each endpoint: state, waiting and parked messages.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let op = try await WebhookOperator.open(options)
        defer { Task { await op.close() } }
        let states = try await op.store.states()
        let stats = try await op.store.stats()
        let now = Timestamp.now.millisecondsSince1970
        var rows = [["ENDPOINT", "KIND", "ORIGIN", "STATE", "PENDING", "PARKED", "OLDEST_PENDING", "PUBLIC_KEYS"]]
        for endpoint in op.endpoints {
            let state = states[endpoint.name]
            let shown = !endpoint.configuredEnabled ? "disabled (configuration)"
                : state?.disabled == true ? "disabled (\(state?.disabledReason ?? "operator"))"
                : state?.failingSinceMs.map { "failing since \(Timestamp(millisecondsSince1970: $0).rfc3339)" } ?? "enabled"
            let one = stats[endpoint.name] ?? WebhookStore.EndpointStats()
            rows.append([endpoint.name, endpoint.kind.rawValue, endpoint.origin, shown, String(one.pending), String(one.parked),
                         one.oldestPendingCreatedAtMs.map { "\((now - $0) / 1_000)s" } ?? "-",
                         endpoint.publicKeys.isEmpty ? "-" : endpoint.publicKeys.joined(separator: " ")])
        }
        Output.line(Table.render(rows))
    }
}

struct WebhooksAttempts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attempts", abstract: "An endpoint's attempts, newest first.")

    @OptionGroup var options: ConfigOptions
    @Option(help: "The endpoint's name (webhooks.endpoints[].name).") var endpoint: String
    @Option(help: "Only the messages about this purchase (its id, pur_...: the deliveries' subject).") var subject: String?
    @Option(help: "Only attempts since then (RFC 3339, or an age: 30m, 24h, 7d; default 24h).") var since: TimeArgument?
    @Option(help: "At most this many rows.") var limit = 100

    func run() async throws {
        let op = try await WebhookOperator.open(options)
        defer { Task { await op.close() } }
        let chosen = try op.endpoint(endpoint)
        let sinceMs = since?.milliseconds ?? Timestamp.now.millisecondsSince1970 - 86_400_000
        var narrowed: Set<String>?
        if let subject {
            // A message's attempts may be later than the message: its messages since the retention began.
            let messages = try await op.messages(for: chosen, sinceMs: 0, purchaseId: subject, messageId: nil)
            narrowed = Set(messages.map(\.messageId))
        }
        let attempts = try await op.store.attempts(endpoint: chosen.name, sinceMs: sinceMs, messageIds: narrowed, limit: max(0, limit))
        // Event ids as the deliveries name them: some ids carry a purchase token.
        let ids = op.entitlements.purchaseIds
        var rows = [["TIME", "MESSAGE", "EVENT", "TYPE", "ATTEMPT", "OUTCOME", "STATUS", "MS", "ANSWER"]]
        for attempt in attempts {
            rows.append([Timestamp(millisecondsSince1970: attempt.attemptedAtMs).rfc3339, attempt.messageId, ids.eventId(attempt.eventId), attempt.eventType,
                         String(attempt.attempt), attempt.outcome, attempt.statusCode.map(String.init) ?? "-", String(attempt.latencyMs),
                         String(attempt.excerpt.prefix(80))])
        }
        Output.line(Table.render(rows))
    }
}

struct WebhooksReplay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Deliver kept messages to an endpoint again, each with its own id, from its first attempt.",
        discussion: """
            Chooses the messages kept (webhooks.retentionDays) that the endpoint's filters take: one purchase's (--subject), \
            those recorded since a time (--since; an endpoint added later receives what it missed), or one message (--message). \
            Each lane delivers in its order; a replayed message carries the entitlement as it stood then (its sequence says so).
            """)

    @OptionGroup var options: ConfigOptions
    @Option(help: "The endpoint's name (webhooks.endpoints[].name).") var endpoint: String
    @Option(help: "The messages about this purchase (its id, pur_...).") var subject: String?
    @Option(help: "The messages recorded since then (RFC 3339, or an age: 30m, 24h, 7d).") var since: TimeArgument?
    @Option(help: "One message, by its id (msg_...).") var message: String?
    @Flag(help: "List what would be sent; send nothing.") var dryRun = false

    func validate() throws {
        guard [subject != nil, since != nil, message != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("choose the messages with one of --subject, --since or --message")
        }
    }

    func run() async throws {
        let op = try await WebhookOperator.open(options)
        defer { Task { await op.close() } }
        let chosen = try op.endpoint(endpoint)
        let messages = try await op.messages(for: chosen, sinceMs: since?.milliseconds ?? 0, purchaseId: subject, messageId: message)
        let ids = op.entitlements.purchaseIds
        var rows = [["MESSAGE", "TIME", "EVENT", "TYPE", "USER", "PRODUCT"]]
        for one in messages {
            rows.append([one.messageId, Timestamp(millisecondsSince1970: one.createdAtMs).rfc3339, ids.eventId(one.eventId), one.eventType, one.user,
                         one.product])
        }
        Output.line(Table.render(rows))
        if dryRun {
            Output.error("dry run: \(messages.count) message(s) would be sent to \(chosen.name)")
            return
        }
        let queued = try await op.store.replay(endpoint: chosen.name, sequences: messages.map(\.sequence), nowMs: Timestamp.now.millisecondsSince1970)
        Output.error("queued \(queued) message(s) for \(chosen.name)")
        if queued < messages.count {
            Output.error("\(messages.count - queued) left out: their entitlement has an attempt in flight; run the replay again once it is answered")
            throw ExitCode(1)
        }
    }
}

struct WebhooksEnable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable",
                                                    abstract: "Deliver to an endpoint again, from where it stopped (a disabled or failing one).")

    @OptionGroup var options: ConfigOptions
    @Option(help: "The endpoint's name.") var endpoint: String

    func run() async throws { try await WebhookOperator.setDisabled(false, endpoint: endpoint, options) }
}

struct WebhooksDisable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable",
                                                    abstract: "Stop delivering to an endpoint; its messages wait for `enable`.")

    @OptionGroup var options: ConfigOptions
    @Option(help: "The endpoint's name.") var endpoint: String

    func run() async throws { try await WebhookOperator.setDisabled(true, endpoint: endpoint, options) }
}

extension WebhookOperator {
    /// `disable` and `enable`: the operator's word, kept in the store for every replica.
    static func setDisabled(_ disabled: Bool, endpoint name: String, _ options: ConfigOptions) async throws {
        let op = try await WebhookOperator.open(options)
        defer { Task { await op.close() } }
        let chosen = try op.endpoint(name)
        try await op.store.setDisabled(chosen.name, disabled, reason: "operator", nowMs: Timestamp.now.millisecondsSince1970)
        if !disabled, !chosen.configuredEnabled {
            Output.error("note: webhooks.endpoints sets enabled: false for \(chosen.name); it stays off until that changes")
        }
        Output.error("\(chosen.name) \(disabled ? "disabled" : "enabled")")
    }
}
