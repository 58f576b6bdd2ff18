import Config
import Foundation
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

@Suite("Alipay+ key files at start-up")
struct AlipayPlusKeyFilesTests {
    static func file(_ contents: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-alipay-\(UUID().uuidString).pem")
        try Data(contents.utf8).write(to: url)
        return url.path
    }

    func configError(_ client: AlipayPlusSettings.Client) -> ConfigError? {
        var settings = AlipayPlusSettings()
        settings.clients = [client]
        do {
            _ = try AlipayPlusSource(settings: settings)
            return nil
        } catch {
            return error
        }
    }

    @Test("readable keys load, and the loaded source verifies and signs")
    func loads() async throws {
        let platform = try Self.file(try #require(AlipayPlusFixtures.platformKey.publicKeyPEM))
        let merchant = try Self.file(try await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]))
        var settings = AlipayPlusSettings()
        settings.clients = [AlipayPlusSettings.Client(clientId: AlipayPlusFixtures.clientId,
                                                      platformPublicKeys: [.init(path: platform, keyVersion: 1)],
                                                      merchantPrivateKey: merchant)]
        let source = try AlipayPlusSource(settings: settings)
        let response = try await source.handle(AlipayPlusFixtures.request(AlipayPlusFixtures.antomBody)).response
        #expect(response.headers.first(where: { $0.name == "Signature" })?.value.hasPrefix("algorithm=RSA256,signature=") == true)
    }

    @Test("an unreadable file, a file that is no key, or a weak key stops start-up naming the key")
    func failures() throws {
        let garbage = try Self.file("not a key")
        let weak = try Self.file(try #require(PrivateKey.generateRSA(bits: 1024)?.publicKeyPEM))
        let ec = try Self.file(try #require(PrivateKey.generateP256()?.publicKeyPEM))
        let good = try Self.file(try #require(AlipayPlusFixtures.platformKey.publicKeyPEM))
        let cases: [(AlipayPlusSettings.Client, String, String)] = [
            (.init(clientId: "c", platformPublicKeys: [.init(path: "/nonexistent/antom.pem")]), "platformPublicKeys[0]", "cannot read"),
            (.init(clientId: "c", platformPublicKeys: [.init(path: good), .init(path: garbage)]), "platformPublicKeys[1]", "not a public key"),
            (.init(clientId: "c", platformPublicKeys: [.init(path: weak)]), "platformPublicKeys[0]", "2048"),
            (.init(clientId: "c", platformPublicKeys: [.init(path: ec)]), "platformPublicKeys[0]", "RSA"),
            (.init(clientId: "c", platformPublicKeys: [.init(path: good)], merchantPrivateKey: "/nonexistent/m.pem"), "merchantPrivateKey", "cannot read"),
            (.init(clientId: "c", platformPublicKeys: [.init(path: good)], merchantPrivateKey: good), "merchantPrivateKey", "not a private key"),
        ]
        for (client, key, message) in cases {
            let error = configError(client)
            #expect(error?.key == "sources.alipayplus.clients[0].\(key)", "\(String(describing: error))")
            #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        }
    }

    func openssl(_ arguments: [String]) async throws -> String {
        try await Subprocess.run("/usr/bin/openssl", arguments).output
    }
}
