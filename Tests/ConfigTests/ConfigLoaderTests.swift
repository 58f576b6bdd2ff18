import Config
import Testing
import Verifiers

@Suite("Configuration")
struct ConfigLoaderTests {
    @Test("no file and no environment gives the documented defaults")
    func defaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(config.http.port == 8080)
        #expect(config.http.maxBodyBytes == 262_144)
        #expect(config.kafka.brokers == nil)
        #expect(config.kafka.topicPrefix == "tollgate")
        #expect(config.kafka.ackTimeoutMs == 2_000)
        #expect(config.store.url == "sqlite:./.tollgate/tollgate.sqlite")
    }

    @Test("a full file is read")
    func fullFile() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            http: { host: 127.0.0.1, port: 9000, maxBodyBytes: 65536 }
            kafka:
              brokers: "k1:9092,k2:9092"
              ackTimeoutMs: 2000
              properties: { security.protocol: SASL_SSL, sasl.mechanism: PLAIN }
            sources:
              iaptic:
                apps:
                  - { name: a, secrets: [s1, s2] }
                  - { name: b, secrets: [s3] }
              apple:
                apps: [{ bundleId: com.example, appAppleId: 1234, environments: [Sandbox] }]
            """)
        #expect(config.http.port == 9000)
        #expect(config.kafka.brokers == "k1:9092,k2:9092")
        #expect(config.kafka.properties == ["security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"])
        #expect(config.sources.iaptic.apps.map(\.name) == ["a", "b"])
        #expect(config.sources.iaptic.apps[0].secrets == ["s1", "s2"])
        #expect(config.sources.apple.apps.first?.appAppleId == 1234)
    }

    @Test("Apple online checks take a timeout and an optional responder override")
    func appleOnlineChecks() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              apple: { onlineChecks: true, ocspTimeoutMs: 1500, ocspResponder: "http://ocsp-proxy.internal" }
            """)
        #expect(config.sources.apple.onlineChecks)
        #expect(config.sources.apple.ocspTimeoutMs == 1_500)
        #expect(config.sources.apple.ocspResponder == "http://ocsp-proxy.internal")
        #expect(try SenderCatalog.standard.parseConfig(yaml: "").sources.apple.ocspResponder == nil)
    }

    @Test("an unknown key fails and is named", arguments: [
        ("http: { prot: 1 }", "http.prot"),
        ("kafak: {}", "kafak"),
        ("sources: { iaptic: { apps: [{ name: a, secrets: [s], secret: x }] } }", "sources.iaptic.apps[0].secret"),
        ("sources: { paypal: {} }", "sources.paypal"),
    ])
    func unknownKey(yaml: String, key: String) {
        #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: yaml) }
        do { _ = try SenderCatalog.standard.parseConfig(yaml: yaml) } catch {
            #expect(error.key == key)
            #expect(error.description.contains("unknown key"))
        }
    }

    @Test("a bad value fails and is named", arguments: [
        ("http: { port: eighty }", "http.port"),
        ("http: { port: 70000 }", "http.port"),
        ("kafka: { ackTimeoutMs: -1 }", "kafka.ackTimeoutMs"),
        ("store: { url: mysql://x }", "store.url"),
        ("log: { format: xml }", "log.format"),
        ("sources: { iaptic: { apps: [{ name: a, secrets: [] }] } }", "sources.iaptic.apps[0].secrets"),
        ("sources: { iaptic: { apps: [{ secrets: [s] }] } }", "sources.iaptic.apps[0].name"),
        ("http: [1, 2]", "http"),
        ("sources: { apple: { ocspResponder: ftp://x } }", "sources.apple.ocspResponder"),
        ("sources: { apple: { ocspTimeoutMs: 0 } }", "sources.apple.ocspTimeoutMs"),
    ])
    func badValue(yaml: String, key: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            Issue.record("expected a configuration error for \(key)")
        } catch {
            #expect(error.key == key)
        }
    }

    @Test("purchases: receipts up to 1 MiB of base64 and the built-in receipt root unless configured; the limit's range is checked")
    func receiptSettings() throws {
        let plain = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(plain.purchases.maxReceiptBytes == 1_048_576)
        #expect(plain.purchases.receiptRootCertificates.isEmpty)
        let config = try SenderCatalog.standard.parseConfig(
            yaml: "purchases: { maxReceiptBytes: 2097152, receiptRootCertificates: [/etc/tollgate/AppleIncRootCertificate.cer] }")
        #expect(config.purchases.maxReceiptBytes == 2_097_152)
        #expect(config.purchases.receiptRootCertificates == ["/etc/tollgate/AppleIncRootCertificate.cer"])
        let fromEnvironment = try SenderCatalog.standard.parseConfig(yaml: "", environment: [
            "TOLLGATE_PURCHASES_MAX_RECEIPT_BYTES": "65536", "TOLLGATE_PURCHASES_RECEIPT_ROOT_CERTIFICATES": "[a.pem, b.der]"])
        #expect(fromEnvironment.purchases.maxReceiptBytes == 65_536)
        #expect(fromEnvironment.purchases.receiptRootCertificates == ["a.pem", "b.der"])
        for (yaml, key) in [("purchases: { maxReceiptBytes: 1000 }", "purchases.maxReceiptBytes"),
                            ("purchases: { maxReceiptBytes: 100000000 }", "purchases.maxReceiptBytes"),
                            ("purchases: { receiptRootCertificates: [\"\"] }", "purchases.receiptRootCertificates[0]")] {
            #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: yaml) }
            do { _ = try SenderCatalog.standard.parseConfig(yaml: yaml) } catch { #expect(error.key == key, "\(yaml)") }
        }
    }

    @Test("not YAML at all fails clearly")
    func notYAML() {
        #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: "http: {port: [", origin: "x.yaml") }
    }

    @Test("TOLLGATE_* variables override the file")
    func environmentOverrides() throws {
        let config = try SenderCatalog.standard.parseConfig(
            yaml: "http: { port: 9000 }\nkafka: { brokers: file:9092 }",
            environment: [
                "TOLLGATE_HTTP_PORT": "9100",
                "TOLLGATE_KAFKA_BROKERS": "env:9092",
                "TOLLGATE_HTTP_MAX_BODY_BYTES": "4096",
                "TOLLGATE_API_TOKENS": "token-one-0123456789,token-two-0123456789",
                "TOLLGATE_SOURCES_IAPTIC_APPS": "[{name: envapp, secrets: [s]}]",
                "TOLLGATE_KAFKA_PROPERTIES": "{ssl.ca.location: /etc/ca.pem}",
                "PATH": "/usr/bin",
            ])
        #expect(config.http.port == 9100)
        #expect(config.kafka.brokers == "env:9092")
        #expect(config.http.maxBodyBytes == 4096)
        #expect(config.api.tokens == [APIToken("token-one-0123456789"), APIToken("token-two-0123456789")])
        #expect(config.sources.iaptic.apps.map(\.name) == ["envapp"])
        #expect(config.kafka.properties == ["ssl.ca.location": "/etc/ca.pem"])
    }

    @Test("api.tokens: plain tokens answer for every app, {token, apps} only for the apps listed; only refunds: true may ask for refunds")
    func appLimitedTokens() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            api:
              tokens:
                - every-app-0123456789
                - { token: only-shop-0123456789, apps: [com.example.shop, shop-eu] }
                - { token: refunds-all-0123456789, refunds: true }
                - { token: refunds-shop-0123456789, apps: [shop-eu], refunds: true }
            """)
        #expect(config.api.tokens == [APIToken("every-app-0123456789"),
                                      APIToken("only-shop-0123456789", apps: ["com.example.shop", "shop-eu"]),
                                      APIToken("refunds-all-0123456789", refunds: true),
                                      APIToken("refunds-shop-0123456789", apps: ["shop-eu"], refunds: true)])
        #expect(config.api.tokens.map(\.refunds) == [false, false, true, true])
        #expect(config.api.tokens[2].allows(app: "anything") && !config.api.tokens[3].allows(app: "anything"))
        #expect(config.api.tokens[0].allows(app: "anything"))
        #expect(config.api.tokens[1].allows(app: "shop-eu") && !config.api.tokens[1].allows(app: "com.example.other"))
        let fromEnvironment = try SenderCatalog.standard.parseConfig(yaml: "", environment: [
            "TOLLGATE_API_TOKENS": "[plain-token-0123456789, {token: limited-0123456789, apps: [a]}]"])
        #expect(fromEnvironment.api.tokens == [APIToken("plain-token-0123456789"), APIToken("limited-0123456789", apps: ["a"])])
        for (yaml, key) in [("api: { tokens: [short] }", "api.tokens[0]"),
                            ("api: { tokens: [{ token: limited-0123456789 }] }", "api.tokens[0].apps"),
                            ("api: { tokens: [{ token: limited-0123456789, apps: [] }] }", "api.tokens[0].apps"),
                            ("api: { tokens: [{ token: limited-0123456789, refunds: false }] }", "api.tokens[0].apps"),
                            ("api: { tokens: [{ token: limited-0123456789, refunds: maybe }] }", "api.tokens[0].refunds"),
                            ("api: { tokens: [{ token: short, apps: [a] }] }", "api.tokens[0].token"),
                            ("api: { tokens: [{ apps: [a] }] }", "api.tokens[0].token"),
                            ("api: { tokens: [twice-0123456789, { token: twice-0123456789, apps: [a] }] }", "api.tokens")] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
                Issue.record("expected an error for \(yaml)")
            } catch {
                #expect(error.key == key, "\(yaml): \(error)")
            }
        }
    }

    @Test("metrics.port puts /metrics on a listener of its own; it may not take http.port or api.port")
    func metricsPort() throws {
        let defaults = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(defaults.metrics.port == nil && defaults.metrics.host == nil)
        let config = try SenderCatalog.standard.parseConfig(yaml: "metrics: { port: 9464, host: 10.0.0.5 }")
        #expect(config.metrics.port == 9464 && config.metrics.host == "10.0.0.5")
        let fromEnvironment = try SenderCatalog.standard.parseConfig(yaml: "", environment: ["TOLLGATE_METRICS_PORT": "9464"])
        #expect(fromEnvironment.metrics.port == 9464)
        for yaml in ["metrics: { port: 8080 }", "metrics: { port: 8081 }", "metrics: { port: 70000 }", "metrics: { port: x }"] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
                Issue.record("expected an error for \(yaml)")
            } catch {
                #expect(error.key == "metrics.port", "\(yaml): \(error)")
            }
        }
    }

    @Test("an unknown TOLLGATE_ variable fails and is named")
    func unknownVariable() {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "", environment: ["TOLLGATE_HTTP_PROT": "1"])
            Issue.record("expected an error")
        } catch {
            #expect(error.key == "TOLLGATE_HTTP_PROT")
        }
    }

    @Test("a bad environment value is named by its variable's key")
    func badVariable() {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "", environment: ["TOLLGATE_KAFKA_ACK_TIMEOUT_MS": "soon"])
            Issue.record("expected an error")
        } catch {
            #expect(error.key == "kafka.ackTimeoutMs")
        }
    }

    @Test("a missing file is an error naming it")
    func missingFile() {
        do {
            _ = try SenderCatalog.standard.loadConfig(path: "/nonexistent/tollgate.yaml", environment: [:])
            Issue.record("expected an error")
        } catch {
            #expect(error.key == "/nonexistent/tollgate.yaml")
        }
    }
}
