import Config
import Testing
import Verifiers

@Suite("Configuration: Citcon and Alipay+")
struct PaymentSourcesConfigTests {
    func error(_ yaml: String, environment: [String: String] = [:]) -> ConfigError? {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml, environment: environment)
            return nil
        } catch {
            return error
        }
    }

    @Test("Citcon accounts with several secrets and tokens are read")
    func citcon() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              citcon:
                accounts:
                  - { name: shop-eu, secrets: [s1, s2], tokens: [t1] }
                  - { name: legacy, tokens: [t2] }
            """)
        let accounts = config.sources.citcon.accounts
        #expect(accounts.map(\.name) == ["shop-eu", "legacy"])
        #expect(accounts[0].secrets == ["s1", "s2"])
        #expect(accounts[0].tokens == ["t1"])
        #expect(accounts[1].secrets.isEmpty)
    }

    @Test("Citcon start-up errors name the key", arguments: [
        ("sources: { citcon: { accounts: [{ secrets: [s] }] } }", "sources.citcon.accounts[0].name", "required"),
        ("sources: { citcon: { accounts: [{ name: a }] } }", "sources.citcon.accounts[0].secrets", "at least one"),
        ("sources: { citcon: { accounts: [{ name: a, secrets: [''] }] } }", "sources.citcon.accounts[0].secrets", "empty"),
        ("sources: { citcon: { accounts: [{ name: a, tokens: [''] }] } }", "sources.citcon.accounts[0].tokens", "empty"),
        ("sources: { citcon: { accounts: [{ name: a/b, secrets: [s] }] } }", "sources.citcon.accounts[0].name", "path segment"),
        ("sources: { citcon: { accounts: [{ name: a, secrets: [s] }, { name: a, secrets: [t] }] } }", "sources.citcon.accounts", "twice"),
        ("sources: { citcon: { accounts: [{ name: a, secrets: [s] }, { name: b, tokens: [s] }] } }", "sources.citcon.accounts", "share"),
        ("sources: { citcon: { accounts: [{ name: a, secrets: [s], colour: red }] } }", "sources.citcon.accounts[0].colour", "unknown"),
    ])
    func citconErrors(yaml: String, key: String, message: String) {
        let error = error(yaml)
        #expect(error?.key == key)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("Alipay+ keys are paths, or { path, keyVersion } to bind a key to a version")
    func alipayPlus() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              alipayplus:
                clients:
                  - clientId: SANDBOX_1
                    platformPublicKeys: [/keys/antom.pem, { path: /keys/antom-v2.pem, keyVersion: 2 }]
                    merchantPrivateKey: /keys/merchant.pem
                    merchantKeyVersion: 1
                  - { clientId: acquirer, platformPublicKeys: /keys/alipayplus.pem }
            """)
        let clients = config.sources.alipayplus.clients
        #expect(clients.map(\.clientId) == ["SANDBOX_1", "acquirer"])
        #expect(clients[0].platformPublicKeys == [.init(path: "/keys/antom.pem"), .init(path: "/keys/antom-v2.pem", keyVersion: 2)])
        #expect(clients[0].merchantPrivateKey == "/keys/merchant.pem")
        #expect(clients[0].merchantKeyVersion == 1)
        #expect(clients[1].platformPublicKeys == [.init(path: "/keys/alipayplus.pem")])
        #expect(clients[1].merchantPrivateKey == nil)
    }

    @Test("the client list can come from the environment")
    func environment() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "", environment: [
            "TOLLGATE_SOURCES_ALIPAYPLUS_CLIENTS": "[{clientId: c, platformPublicKeys: [/k.pem]}]"])
        #expect(config.sources.alipayplus.clients.first?.platformPublicKeys.first?.path == "/k.pem")
    }

    @Test("the Request-Time window: 25 h back and 300 s ahead by default, set in YAML or the environment")
    func requestTimeWindow() throws {
        let defaults = try SenderCatalog.standard.parseConfig(yaml: "").sources.alipayplus
        #expect(defaults.maxRequestAgeSeconds == 90_000)
        #expect(defaults.maxRequestClockSkewSeconds == 300)
        let set = try SenderCatalog.standard.parseConfig(yaml: "sources: { alipayplus: { maxRequestAgeSeconds: 0, maxRequestClockSkewSeconds: 60 } }",
                                                         environment: ["TOLLGATE_SOURCES_ALIPAYPLUS_MAX_REQUEST_CLOCK_SKEW_SECONDS": "30"]).sources.alipayplus
        #expect(set.maxRequestAgeSeconds == 0)
        #expect(set.maxRequestClockSkewSeconds == 30)
    }

    @Test("Alipay+ start-up errors name the key", arguments: [
        ("sources: { alipayplus: { clients: [{ platformPublicKeys: [/k] }] } }", "sources.alipayplus.clients[0].clientId", "required"),
        ("sources: { alipayplus: { clients: [{ clientId: c }] } }", "sources.alipayplus.clients[0].platformPublicKeys", "at least one"),
        ("sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [{ keyVersion: 1 }] }] } }",
         "sources.alipayplus.clients[0].platformPublicKeys[0].path", "required"),
        ("sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [{ path: /k, keyVersion: one }] }] } }",
         "sources.alipayplus.clients[0].platformPublicKeys[0].keyVersion", "integer"),
        ("sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [{ path: /k, version: 1 }] }] } }",
         "sources.alipayplus.clients[0].platformPublicKeys[0].version", "unknown"),
        ("sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [/k], merchantKeyVersion: 2 }] } }",
         "sources.alipayplus.clients[0].merchantKeyVersion", "merchantPrivateKey"),
        ("sources: { alipayplus: { clients: [{ clientId: c, platformPublicKeys: [/k] }, { clientId: c, platformPublicKeys: [/k] }] } }",
         "sources.alipayplus.clients", "twice"),
        ("sources: { alipayplus: { maxRequestAgeSeconds: -1 } }", "sources.alipayplus.maxRequestAgeSeconds", "604800"),
        ("sources: { alipayplus: { maxRequestClockSkewSeconds: 7200 } }", "sources.alipayplus.maxRequestClockSkewSeconds", "3600"),
    ])
    func alipayPlusErrors(yaml: String, key: String, message: String) {
        let error = error(yaml)
        #expect(error?.key == key)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
