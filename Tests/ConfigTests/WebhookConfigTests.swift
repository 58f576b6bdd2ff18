import Config
import Testing
import Verifiers

/// `webhooks` (docs/configuration.md, docs/outbound-webhooks.md): read as written, with its defaults;
/// refused where an endpoint could receive in clear text, carry a password in its URL, or be named twice.
@Suite("Configuration: webhooks")
struct WebhookConfigTests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    static func yaml(_ endpoint: String, extra: String = "") -> String {
        "webhooks:\n  endpoints:\n    - \(endpoint)\n\(extra)"
    }

    @Test("an endpoint with its defaults, and the schedule of the best peers")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: Self.yaml(
            #"{ name: backend-1, url: "https://api.example.com:8443/hooks?t=1", secrets: [\#(Self.secret)], apps: [com.example], eventTypes: [subscription.renewed] }"#))
        let endpoint = try #require(config.webhooks.endpoints.first)
        #expect(endpoint.name == "backend-1" && endpoint.kind == .events && endpoint.timeoutMs == 15_000 && endpoint.enabled)
        #expect(!endpoint.allowPrivateNetwork && endpoint.apps == ["com.example"] && endpoint.eventTypes == ["subscription.renewed"])
        #expect(config.webhooks.retryScheduleMs == [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000])
        #expect(!config.webhooks.allowLoopback && config.webhooks.disableAfterSeconds == 432_000)
        #expect(EndpointURL(endpoint.url)?.host == "api.example.com")
        #expect(EndpointURL(endpoint.url)?.port == 8443 && EndpointURL(endpoint.url)?.pathAndQuery == "/hooks?t=1")
        #expect(EndpointURL("https://[::1]/x")?.host == "::1")
        // Requests go to the host in lower case: the one the connection's address is pinned under.
        #expect(EndpointURL("https://Hooks.Example.COM/Path?Q=1")?.requestURL == "https://hooks.example.com/Path?Q=1")
        #expect(EndpointURL("https://[::1]:8443")?.requestURL == "https://[::1]:8443/")
        let forward = try SenderCatalog.standard.parseConfig(yaml: Self.yaml(
            #"{ name: old-vendor, kind: forward, url: "https://vendor.example.com/apple", secrets: [\#(Self.secret)], senders: [apple, google] }"#))
        #expect(forward.webhooks.endpoints.first?.kind == .forward && forward.webhooks.endpoints.first?.senders == ["apple", "google"])
    }

    @Test("refused, naming the key", arguments: [
        (#"{ name: a, url: "http://api.example.com/", secrets: [\#(secret)] }"#, "webhooks.endpoints[0].url"),
        (#"{ name: a, url: "https://user:pass@api.example.com/", secrets: [\#(secret)] }"#, "webhooks.endpoints[0].url"),
        (#"{ name: a, url: "https://api.example.com/#x", secrets: [\#(secret)] }"#, "webhooks.endpoints[0].url"),
        (#"{ name: a, url: "https://:443/", secrets: [\#(secret)] }"#, "webhooks.endpoints[0].url"),
        (#"{ name: Backend, url: "https://api.example.com/", secrets: [\#(secret)] }"#, "webhooks.endpoints[0].name"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [] }"#, "webhooks.endpoints[0].secrets"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret), \#(secret), \#(secret)] }"#, "webhooks.endpoints[0].secrets"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], eventTypes: [subscription.renwed] }"#, "webhooks.endpoints[0].eventTypes"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], environments: [staging] }"#, "webhooks.endpoints[0].environments"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], kind: push }"#, "webhooks.endpoints[0].kind"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], timeoutMs: 99 }"#, "webhooks.endpoints[0].timeoutMs"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], kind: forward, senders: [apples] }"#, "webhooks.endpoints[0].senders"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], senders: [apple] }"#, "webhooks.endpoints[0].senders"),
        (#"{ name: a, url: "https://api.example.com/", secrets: [\#(secret)], kind: forward, eventTypes: [subscription.renewed] }"#, "webhooks.endpoints[0].eventTypes"),
    ])
    func refused(endpoint: String, key: String) {
        #expect {
            try SenderCatalog.standard.parseConfig(yaml: Self.yaml(endpoint))
        } throws: { error in
            (error as? ConfigError)?.key == key
        }
    }

    @Test("two endpoints of one name, and a schedule of more than 32 attempts, are refused")
    func refusedTogether() {
        let one = #"{ name: a, url: "https://api.example.com/", secrets: [\#(Self.secret)] }"#
        #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: Self.yaml(one + "\n    - " + one)) }
        let schedule = "  retryScheduleMs: [" + Array(repeating: "1", count: 33).joined(separator: ", ") + "]\n"
        #expect { try SenderCatalog.standard.parseConfig(yaml: Self.yaml(one, extra: schedule)) } throws: { error in
            (error as? ConfigError)?.key == "webhooks.retryScheduleMs"
        }
    }
}
