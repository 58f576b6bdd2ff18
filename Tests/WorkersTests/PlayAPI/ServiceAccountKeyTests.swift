import TestSupport
import Foundation
import Merchant
import ProviderAPIs
import Testing
import Toolkit
import Verifiers
import Workers

/// Reading the service-account key file: a usable key, or an error that says what is wrong with
/// the file without repeating its secret.
@Suite("Play API: service-account key files")
struct ServiceAccountKeyTests {
    @Test("a key file as Google's console writes it")
    func valid() async throws {
        let key = try await TestServiceAccount.key.value
        let path = try await TestServiceAccount.write(TestServiceAccount.json(key: key))
        defer { Task { await TestServiceAccount.remove(path) } }
        let loaded = try ServiceAccountKey.load(path: path)
        #expect(loaded.clientEmail == TestServiceAccount.email)
        #expect(loaded.privateKeyId == TestServiceAccount.keyId)
        #expect(loaded.tokenURI == "https://oauth2.googleapis.com/token")
        #expect("\(loaded)" == "service account \(TestServiceAccount.email) (key \(TestServiceAccount.keyId))")
    }

    @Test("bad files fail with a clear message that never quotes the key")
    func invalid() async throws {
        let key = try await TestServiceAccount.key.value
        let good = try TestServiceAccount.json(key: key)
        let pem = try #require(key.pem)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(good.utf8)) as? [String: String])
        func variant(_ change: (inout [String: Any]) -> Void) throws -> String {
            var copy: [String: Any] = object
            change(&copy)
            return String(decoding: try JSONSerialization.data(withJSONObject: copy), as: UTF8.self)
        }
        let cases: [(String, String)] = [
            ("not json at all", "not a JSON object"),
            ("[1, 2]", "not a JSON object"),
            (try variant { $0["type"] = "authorized_user" }, #""type" is "authorized_user", expected "service_account""#),
            (try variant { $0["type"] = nil }, #""type" is missing"#),
            (try variant { $0["client_email"] = nil }, #""client_email" is missing"#),
            (try variant { $0["private_key_id"] = "" }, #""private_key_id" is missing"#),
            (try variant { $0["private_key"] = nil }, #""private_key" is missing"#),
            (try variant { $0["private_key"] = 42 }, #""private_key" is not a string"#),
            (try variant { $0["private_key"] = String(pem.dropLast(40)) }, #""private_key" is not a PEM private key"#),
        ]
        for (contents, expected) in cases {
            let error = #expect(throws: ServiceAccountKeyError.self) { try ServiceAccountKey(json: Array(contents.utf8)) }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "no error") for \(expected)")
            #expect(error?.message.contains("PRIVATE KEY") == false)
        }

        // An EC key cannot sign RS256.
        let ec = try #require(PrivateKey.generateP256())
        let ecFile = try TestServiceAccount.json(key: ec)
        let ecError = #expect(throws: ServiceAccountKeyError.self) { try ServiceAccountKey(json: Array(ecFile.utf8)) }
        #expect(ecError?.message.contains("not an RSA key") == true)

        // The path leads the message.
        let missing = "/nonexistent/tollgate/service-account.json"
        let missingError = #expect(throws: ServiceAccountKeyError.self) { try ServiceAccountKey.load(path: missing) }
        #expect(missingError?.description == "\(missing): cannot read the service-account key file")
        let path = try await TestServiceAccount.write(try variant { $0["type"] = "external_account" })
        defer { Task { await TestServiceAccount.remove(path) } }
        let fileError = #expect(throws: ServiceAccountKeyError.self) { try ServiceAccountKey.load(path: path) }
        #expect(fileError?.message.hasPrefix("\(path): \"type\" is \"external_account\"") == true)
    }
}
