import Config
import Synchronization
import Testing
@testable import Webhooks

/// The address classes a webhook endpoint's resolved address falls in (delivery reaches only public ones
/// unless configuration allows loopback or private networks).
@Suite("Endpoint address classes")
struct EndpointAddressTests {
    @Test("each literal's class", arguments: [
        ("93.184.215.14", "public"), ("8.8.8.8", "public"), ("172.32.0.1", "public"), ("100.128.0.1", "public"), ("2606:4700::1111", "public"),
        ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
        ("100.64.0.1", "private"), ("169.254.169.254", "reserved"), ("fd00::1", "private"), ("fc00::1", "private"), ("fe80::1", "reserved"),
        ("fec0::1", "private"), ("::ffff:10.0.0.1", "private"), ("::ffff:169.254.169.254", "reserved"), ("64:ff9b::a9fe:a9fe", "reserved"),
        ("::ffff:0:a00:1", "private"), ("::ffff:0:7f00:1", "loopback"), ("64:ff9b:1::a00:1", "private"), ("64:ff9b:1::808:808", "private"),
        ("64:ff9b:1::7f00:1", "loopback"),
        ("2002:c0a8:0101::1", "private"), ("::10.0.0.1", "private"),
        ("0.0.0.0", "reserved"), ("::", "reserved"), ("224.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"), ("198.51.100.7", "reserved"), ("203.0.113.9", "reserved"), ("198.18.0.1", "reserved"),
        ("ff02::1", "reserved"), ("2001:db8::1", "reserved"), ("2001:0:4136:e378::1", "reserved"), ("100::1", "reserved"),
        ("::ffff:93.184.215.14", "public"), ("2002:5db8:d70e::1", "public"),
    ])
    func classes(literal: String, expected: String) {
        #expect(EndpointAddress.classify(literal)?.rawValue == expected)
    }

    @Test("a name, a malformed or a zone-scoped literal is not an address literal", arguments: [
        "example.com", "127.1", "1.2.3", "1.2.3.4.5", "256.0.0.1", "::1%lo", "[::1]", "", " 10.0.0.1", "0x7f.0.0.1",
    ])
    func notLiterals(text: String) {
        #expect(EndpointAddress.classify(text) == nil)
    }
}

/// The endpoints the workers build from configuration: a secret or key that does not parse stops the
/// start naming its key, and forward endpoints (not delivered by this version) are refused.
@Suite("Webhook endpoints from configuration")
struct WebhookEndpointTests {
    static func settings(_ change: (inout WebhookSettings.Endpoint) -> Void) -> WebhookSettings {
        var endpoint = WebhookSettings.Endpoint(name: "a", url: "https://api.example.com/")
        endpoint.secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
        change(&endpoint)
        var settings = WebhookSettings()
        settings.endpoints = [endpoint]
        return settings
    }

    @Test("a good endpoint, its origin without the path, its key's public half")
    func built() throws {
        let endpoints = try WebhookEndpoint.all(Self.settings { $0.signingKeys = ["whsk_" + String(repeating: "A", count: 43) + "="] })
        #expect(endpoints.first?.origin == "https://api.example.com:443")
        #expect(endpoints.first?.publicKeys.first?.hasPrefix("whpk_") == true)
    }

    @Test("refused, naming the key", arguments: [
        ("secrets", "webhooks.endpoints[0].secrets[0]"), ("signingKeys", "webhooks.endpoints[0].signingKeys[0]")
    ])
    func refused(field: String, key: String) {
        let settings = Self.settings { endpoint in
            switch field {
            case "secrets": endpoint.secrets = ["whsec_c2hvcnQ="]
            default: endpoint.signingKeys = ["whsk_notbase64"]
            }
        }
        #expect { try WebhookEndpoint.all(settings) } throws: { error in (error as? ConfigError)?.key == key }
    }
}

/// The dispatcher's name lookups: one at a time per host, its answer kept a few seconds, no answer never kept.
@Suite("Webhook endpoints' name lookups")
struct HostLookupsTests {
    final class Calls: Sendable {
        let count = Mutex(0)
        let answers: Mutex<[[String]]>
        init(_ answers: [[String]]) { self.answers = Mutex(answers) }
    }

    @Test("attempts to one host at once share one lookup; its answer serves the next ones; an empty answer is asked again")
    func shared() async throws {
        let calls = Calls([[], ["192.0.2.7"]])
        let lookups = HostLookups { _, _ in
            try? await Task.sleep(for: .milliseconds(50))
            calls.count.withLock { $0 += 1 }
            return calls.answers.withLock { $0.isEmpty ? ["192.0.2.9"] : $0.removeFirst() }
        }
        func addresses(port: Int = 443) async -> [String] {
            switch lookups.addresses("hooks.example.com", port: port) {
            case .answered(let addresses): return addresses
            case .pending(let task): return await task.value
            }
        }
        // The first lookup answers nothing: not kept.
        let first = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { await addresses() } }
            return await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(first.allSatisfy { $0.isEmpty } && calls.count.withLock { $0 } == 1)
        #expect(await addresses() == ["192.0.2.7"])
        #expect(await addresses() == ["192.0.2.7"], "kept: no lookup")
        #expect(calls.count.withLock { $0 } == 2)
        // Another port is another entry.
        #expect(await addresses(port: 8443) == ["192.0.2.9"])
        #expect(calls.count.withLock { $0 } == 3)
    }
}
