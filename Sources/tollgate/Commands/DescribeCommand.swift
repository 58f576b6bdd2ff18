import ArgumentParser
import Config
import Console
import Entitlements
import Events
import Foundation
import Gateway
import Merchant
import Rejections
import ServiceHost
import Toolkit
import Verifiers
import Webhooks
import Workers

/// What the built binary knows about its own interfaces, as JSON: the deployment and document checks
/// (scripts/validate-deploy.py) compare docs and manifests with this instead of reading Swift source.
struct DescribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Print what this binary serves and understands (routes, reason codes, event types, metrics, configuration keys, topics) as JSON.")

    @Flag(help: "JSON output (the only format; kept explicit for scripts).") var json = false
    @Option(help: "A configuration file: its product catalog and webhook endpoints are listed too (under \"catalog\" and \"webhookEndpoints\").") var config: String?

    func run() async throws {
        let catalog = SenderCatalog.standard
        let config: TollgateConfig
        let schema: [ConfigSchema.Key]
        var products: [[String: Any]]?
        var endpoints: [[String: Any]]?
        do {
            if let path = self.config {
                let loaded = try ConfigLoader.load(path: path, senders: catalog.configSections)
                products = Self.describe(loaded.catalog)
                endpoints = Self.describe(try WebhookEndpoint.all(loaded.webhooks), settings: loaded.webhooks)
            }
            config = try catalog.parseConfig(yaml: "")
            schema = try ConfigLoader.schema(senders: catalog.configSections)
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
        let registry = try catalog.registry(config.sources)
        var routes: [[String: Any]] = HealthRoutes.methods.keys.sorted().map { path in
            ["path": path, "methods": HealthRoutes.methods[path, default: []].map(\.rawValue)]
        }
        for sender in registry.senders {
            let path = GatewayServer.webhookPath(sender.source.name)
            routes.append(["path": path, "methods": ["POST"], "sender": sender.source.name.rawValue])
            if sender.routesAccounts {
                routes.append(["path": path + "/{account}", "methods": ["POST"], "sender": sender.source.name.rawValue])
            }
        }
        routes.append(["path": EntitlementAPI.path.replacingOccurrences(of: ":user", with: "{user}"), "methods": ["GET"]])
        routes.append(["path": SupportAPI.path.replacingOccurrences(of: ":user", with: "{user}"), "methods": ["GET"]])
        routes += [["path": CheckoutAPI.collectionPath, "methods": ["POST"]],
                   ["path": CheckoutAPI.itemPath.replacingOccurrences(of: ":id", with: "{id}"), "methods": ["GET"]]]
        var object: [String: Any] = [
            "senders": registry.senders.map { sender -> [String: Any] in
                ["name": sender.source.name.rawValue, "route": GatewayServer.webhookPath(sender.source.name),
                 "accountRoute": sender.routesAccounts, "rawTopic": config.topicNames.raw(sender.source.name),
                 "keptRequestHeaders": DeliveryRecordBuilder.commonRequestHeaders + sender.keptRequestHeaders]
            },
            "routes": routes,
            // Every domain's reasons: the common ones, the senders', the merchant APIs', the console's.
            "reasons": ([ReasonCodeList(CommonReason.self), ReasonCodeList(WebhookReason.self)] + MerchantReasons.lists
                        + [ReasonCodeList(ConsoleReason.self)]).flatMap { list in
                list.reasons.map { ["code": $0.code, "status": $0.httpStatus, "domain": list.domain] as [String: Any] }
            },
            "eventTypes": EventType.allCases.map(\.rawValue),
            "entitlementStates": PurchaseState.allCases.map(\.rawValue),
            "deadLetterHeaders": SpringHeaders.all.union([SpringHeaders.replayCount]).sorted(),
            "workerFailures": WorkerFailure.Kind.allCases.map(\.rawValue),
            "metrics": (GatewayMetrics.families + WorkerMetrics.all).map { family -> [String: Any] in
                ["name": family.name, "type": family.kind.rawValue, "labels": family.labels, "help": family.help]
            },
            "config": schema.map { key -> [String: Any] in
                var entry: [String: Any] = ["key": key.key]
                if let environment = key.environment { entry["env"] = environment }
                switch key.defaultValue {
                case .text(let text)?: entry["default"] = text
                case .int(let number)?: entry["default"] = number
                case .bool(let flag)?: entry["default"] = flag
                case nil: break
                }
                return entry
            },
            "topics": config.topicNames.all.map { ["name": $0.name, "compacted": $0.compacted] },
        ]
        if let products { object["catalog"] = products }
        if let endpoints { object["webhookEndpoints"] = endpoints }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        Output.line(String(decoding: data, as: UTF8.self))
    }

    /// The webhook endpoints, as `--config` lists them: never a secret, nor the URL's path or query.
    static func describe(_ endpoints: [WebhookEndpoint], settings: WebhookSettings) -> [[String: Any]] {
        zip(endpoints, settings.endpoints).map { endpoint, configured -> [String: Any] in
            ["name": endpoint.name, "kind": endpoint.kind.rawValue, "origin": endpoint.origin, "enabled": configured.enabled,
             "apps": configured.apps.sorted(), "environments": configured.environments.sorted(), "eventTypes": configured.eventTypes.sorted(),
             "senders": configured.senders.sorted(),
             "timeoutMs": configured.timeoutMs, "secrets": configured.secrets.count, "publicKeys": endpoint.publicKeys,
             "allowPrivateNetwork": configured.allowPrivateNetwork]
        }
    }

    /// The catalog's apps and products, as `--config` lists them.
    static func describe(_ catalog: CatalogSettings) -> [[String: Any]] {
        catalog.apps.map { app -> [String: Any] in
            ["name": app.name, "ids": app.ids, "products": app.products.map { product -> [String: Any] in
                var entry: [String: Any] = ["id": product.id, "prices": product.pricesMinor, "entitlements": product.entitlements]
                if let apple = product.apple { entry["apple"] = apple }
                if let google = product.google { entry["google"] = google }
                return entry
            }]
        }
    }
}
