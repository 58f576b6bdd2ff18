import Events
import Foundation
import Kafka
import TestSupport
import Testing
import Toolkit
import Verifiers
#if canImport(Glibc)
import Glibc
#endif

/// A scripted Sileo client walks the Payment Provider API step by step against a real
/// `tollgate dev`, paying through a real Antom checkout: the purchase answers status 1 with the cashier
/// page a local Antom returns from `pay` (as Antom documents it), Antom's signed notification comes
/// through the real webhook route, the projection entitles the user, the package downloads once.
@Suite("tollgate dev: a Sileo client buys and downloads a package through an Antom checkout")
struct SileoDevWalkTests {
    static let clientId = "CLIENT_SILEO_DEV_01"
    static let base = "/sileo/shop"
    static let upiBase = "/sileo/upi"
    static let package = "com.example.tweak"
    static let product = "tweak.lifetime"
    static let fileBytes: [UInt8] = Array("!<arch>\ndebian-binary   ".utf8) + (0...255).map { UInt8($0) }

    static let apiToken = "sileo-dev-walk-token-0123"
    static let validatorKey = "sileo-dev-validator-key-0123456789"
    static let secretsApp = "com.example.secrets"
    static let purchaseToken = "secret-purchase-token.AO-J1OzSileoDevWalk"

    @Test("info, sign-in, user_info, package info, purchase (Antom pay), the signed notification, purchased, one download, refunded through Antom; a wrong secret, another user, a wrong amount; then through Citcon, refunded; no worker secret in the output, on a topic or in an answer")
    func walk() async throws {
        let (merchant, platform, playKey) = await offPool { (PrivateKey.generateRSA()!, PrivateKey.generateRSA()!, PrivateKey.generateRSA()!) }
        let appStoreKey = try #require(PrivateKey.generateP256())
        let chain = try AppleTestChain()
        let signInKey = try #require(PrivateKey.generateP256())
        let merchantPublic = try #require(PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8)))
        let antom = FakeAntom(merchantPublicKey: merchantPublic, platformKey: platform, clientId: Self.clientId)
        defer { antom.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-sileo-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("debs"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.fileBytes).write(to: directory.appendingPathComponent("debs/tweak.deb"))
        try Data((merchant.pem ?? "").utf8).write(to: directory.appendingPathComponent("merchant.pem"))
        try Data((platform.publicKeyPEM ?? "").utf8).write(to: directory.appendingPathComponent("antom-public.pem"))
        try Data((signInKey.publicKeyPEM ?? "").utf8).write(to: directory.appendingPathComponent("signin.pem"))
        // The workers' other secrets: an App Store Server API key (.p8) and a Play service account, each
        // used below against an endpoint that does not answer, and a validator key sent in URLs.
        try Data((appStoreKey.pem ?? "").utf8).write(to: directory.appendingPathComponent("SubscriptionKey.p8"))
        try Data(chain.root.pem.utf8).write(to: directory.appendingPathComponent("apple-root.pem"))
        let serviceAccount = try TestServiceAccount.json(key: playKey)
        try Data(serviceAccount.utf8).write(to: directory.appendingPathComponent("play.json"))
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            log: { level: debug, format: json }
            api: { tokens: [{ token: \(Self.apiToken), refunds: true }] }
            purchases: { validatorKeys: { \(Self.secretsApp): \(Self.validatorKey) } }
            catalog:
              apps:
                - { name: Shop, ids: [\(Self.clientId)], products: [{ id: \(Self.product), prices: { USD: 199 } }] }
                - { name: UPI Shop, ids: [\(CheckoutDevTests.account)], products: [{ id: \(Self.product), prices: { USD: 2500 } }] }
            checkouts: { publicBaseURL: "https://pay.example.com", antomBaseURL: "\(antom.baseURL)", antomTimeoutMs: 5000 }
            sources:
              alipayplus: { clients: [{ clientId: \(Self.clientId), platformPublicKeys: [\(directory.path)/antom-public.pem], merchantPrivateKey: \(directory.path)/merchant.pem }] }
              citcon: { accounts: [{ name: \(CheckoutDevTests.account), secrets: [\(CheckoutDevTests.secret)] }] }
              apple:
                roots: [\(directory.path)/apple-root.pem]
                apps:
                  - bundleId: \(Self.secretsApp)
                    appAppleId: 1234
                    environments: [Production, Sandbox]
                    serverApi: { issuerId: 57246542-96fe-1a63-e053-0824d011072a, keyId: 2X9R4HXF34, privateKeyFile: \(directory.path)/SubscriptionKey.p8 }
                serverApiEndpoints: { productionURL: "http://127.0.0.1:9/production", sandboxURL: "http://127.0.0.1:9/sandbox", timeoutMs: 2000 }
              google:
                audience: https://example.com/webhooks/google
                serviceAccountEmail: push@example.iam.gserviceaccount.com
                packages: [\(Self.secretsApp)]
                jwks: https://127.0.0.1:9/certs
                playApi: { baseURL: "http://127.0.0.1:9", tokenURL: "http://127.0.0.1:9/token", credentialsFile: \(directory.path)/play.json, timeoutMs: 2000 }
            sileo:
              vendors:
                - basePath: \(Self.base)
                  name: Shop
                  icon: https://repo.example/icon.png
                  description: Shop Pay
                  publicBaseURL: https://repo.example
                  app: \(Self.clientId)
                  provider: alipayplus
                  signIn: { url: "https://login.example/sileo", assertionKeyFile: \(directory.path)/signin.pem }
                  downloadDirectory: \(directory.path)
                  packages:
                    - { id: \(Self.package), product: \(Self.product), currency: USD, price: "$1.99", file: debs/tweak.deb }
                - basePath: \(Self.upiBase)
                  name: UPI Shop
                  icon: https://repo.example/icon.png
                  description: UPI Pay
                  publicBaseURL: https://repo.example
                  app: \(CheckoutDevTests.account)
                  provider: citcon
                  paymentPageURL: "https://pay.example.com/upi?shop=1"
                  signIn: { url: "https://login.example/sileo", assertionKeyFile: \(directory.path)/signin.pem }
                  downloadDirectory: \(directory.path)
                  packages:
                    - { id: \(Self.package), product: \(Self.product), currency: USD, price: "$25.00", file: debs/tweak.deb }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        try await withOwnDev(configPath: configPath, directory: directory) { local, child in
            var secrets = try await Self.walk(local: local, antom: antom, platform: platform, signInKey: signInKey)
            secrets += try await Self.citconWalk(local: local, signInKey: signInKey)
            var answers = try await Self.storeCalls(local: local)
            answers.append(("user_info", String(decoding: try await SileoHTTP.call("POST", local + Self.base + "/user_info",
                                                                                json: #"{"token":"BEARER \#(secrets[0])"}"#).body, as: UTF8.self)))
            // What must never leave: the credentials configured, the keys' material, what the devices hold.
            let keyMaterial = [merchant, playKey, appStoreKey].map { Self.pemBody($0.pem ?? "") }
            secrets += [Self.apiToken, Self.validatorKey, Self.purchaseToken, CheckoutDevTests.secret] + keyMaterial
            #expect(secrets.count == 13 && secrets.allSatisfy { $0.count >= 16 }, "\(secrets.map(\.count))")
            let bootstrap = try String(contentsOf: directory.appendingPathComponent(".tollgate/bootstrap"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            var places: [(String, [UInt8])] = [("the process's output", Array(child.output.utf8))]
            for topic in ["tollgate.events", "tollgate.entitlements", "tollgate.events-dlt", "tollgate.raw.alipayplus", "tollgate.raw.citcon"] {
                for record in try await TopicRecords.read(topic, bootstrap: bootstrap) {
                    places.append(("\(topic) record \(record.offset)", (record.key ?? []) + record.value + record.headers.flatMap { Array($0.name.utf8) + ($0.value ?? []) }))
                }
            }
            places += answers.map { ("the answer to \($0.0)", Array($0.1.utf8)) }
            #expect(places.count > 10, "\(places.map(\.0))")
            for secret in secrets {
                let needle = Array(secret.utf8)
                for (place, bytes) in places where bytes.count >= needle.count {
                    let found = (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
                    #expect(!found, "a secret (\(secret.prefix(4))...) is in \(place)")
                }
            }
        }
    }

    /// A key's PEM body, one line of its base64: what a leak of the key file would show.
    static func pemBody(_ pem: String) -> String {
        String(pem.split(separator: "\n").dropFirst().first ?? "")
    }

    /// The calls that use the workers' store credentials, each refused or unanswered: the validator key in
    /// the URL (right and wrong), a Play purchase token with the service account, an Apple transaction id
    /// with the .p8. What each answered.
    static func storeCalls(local: String) async throws -> [(String, String)] {
        let android = #"{"id":"premium","type":"paid subscription","transaction":{"type":"android-playstore","id":"GPA.1","purchaseToken":"\#(purchaseToken)","receipt":"{\"packageName\":\"\#(secretsApp)\",\"productId\":\"premium\",\"purchaseToken\":\"\#(purchaseToken)\"}","signature":"c2ln"},"additionalData":{"applicationUsername":"dave"}}"#
        let validated = try await HTTP.request("POST", local + "/v1/validate?appName=\(secretsApp)&apiKey=\(validatorKey)&errorStatus=http",
                                               headers: ["Content-Type": "application/json"], body: android)
        #expect(validated.status == 503, "\(validated.status) \(validated.body)")
        let wrongKey = try await HTTP.request("POST", local + "/v1/validate?appName=\(secretsApp)&apiKey=\(validatorKey.uppercased())",
                                              headers: ["Content-Type": "application/json"], body: android)
        #expect(wrongKey.status == 200 && wrongKey.body.contains("6778007"), "\(wrongKey.body)")
        let google = try await HTTP.request("POST", local + "/v1/purchases", headers: ["Authorization": "Bearer \(apiToken)", "Content-Type": "application/json"],
                                            body: #"{"app":"\#(secretsApp)","user":"dave","google":{"packageName":"\#(secretsApp)","productId":"premium","purchaseToken":"\#(purchaseToken)"}}"#)
        #expect(google.status == 503, "\(google.status) \(google.body)")
        let apple = try await HTTP.request("POST", local + "/v1/purchases", headers: ["Authorization": "Bearer \(apiToken)", "Content-Type": "application/json"],
                                           body: #"{"app":"\#(secretsApp)","user":"dave","apple":{"transactionId":"2000000123456789"}}"#)
        #expect(apple.status == 503, "\(apple.status) \(apple.body)")
        return [("validate", validated.body), ("validate with a wrong key", wrongKey.body), ("a Google purchase", google.body), ("an Apple purchase", apple.body)]
    }

    /// The walk through an Antom vendor; the device credentials it was given (tokens, payment secrets).
    static func walk(local: String, antom: FakeAntom, platform: PrivateKey, signInKey: PrivateKey) async throws -> [String] {
        let vendor = local + base
        let info = try await SileoHTTP.call("GET", vendor + "/info")
        #expect(info.status == 200 && info.json["name"]?.string == "Shop")

        let alice = try await signIn(vendor: vendor, local: local, user: "alice", key: signInKey)
        #expect(try await SileoHTTP.call("POST", vendor + "/user_info", json: #"{"token":"BEARER \#(alice.token)"}"#).json["items"]?.array?.isEmpty == true)
        let before = try await SileoHTTP.call("POST", vendor + "/package/\(package)/info", json: #"{"token":"BEARER \#(alice.token)"}"#)
        #expect(before.json["price"]?.string == "$1.99" && before.json["purchased"]?.bool == false && before.json["available"]?.bool == true)

        // A wrong payment secret starts nothing.
        let wrong = try await SileoHTTP.call("POST", vendor + "/package/\(package)/purchase", json: #"{"token":"BEARER \#(alice.token)","payment_secret":"not-the-secret"}"#)
        #expect(wrong.status == 403 && antom.seen.isEmpty)

        // The purchase: Tollgate calls Antom's pay; Sileo opens the cashier page it answered.
        let purchase = try await SileoHTTP.call("POST", vendor + "/package/\(package)/purchase",
                                                json: #"{"token":"BEARER \#(alice.token)","payment_secret":"\#(alice.secret)"}"#)
        #expect(purchase.json["status"]?.int64 == 1, "\(String(decoding: purchase.body, as: UTF8.self))")
        let reference = try #require(antom.seen.last?.body?["paymentRequestId"]?.string)
        let checkout = try #require(antom.seen.last?.body?["order"]?["referenceOrderId"]?.string)
        #expect(purchase.json["url"]?.string == FakeAntom.pageURL(reference))
        #expect(antom.seen.last?.signatureVerified == true)
        #expect(antom.seen.last?.body?["paymentAmount"]?["value"]?.string == "199")

        // Antom tells Tollgate the payment succeeded, signed, through the webhook route.
        #expect(try await notify(local: local, reference: reference, amount: "199", platform: platform).status == 200)
        try await waitUntilPurchased(vendor: vendor, token: alice.token, expected: true)
        #expect(try await SileoHTTP.call("POST", vendor + "/user_info", json: #"{"token":"BEARER \#(alice.token)"}"#)
            .json["items"]?.array?.compactMap(\.string) == [package])

        // The download: an https URL with a single-use key and nothing of the user's; once.
        let authorized = try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download",
                                                  json: #"{"token":"BEARER \#(alice.token)","udid":"u","device":"iPhone7,2","version":"1.0","repo":"https://repo.example"}"#)
        let url = try #require(authorized.json["url"]?.string)
        #expect(url.hasPrefix("https://repo.example\(base)/download/\(package)") && !url.contains(alice.token) && !url.contains("alice"))
        let path = String(url.dropFirst("https://repo.example".count))
        let download = try await SileoHTTP.call("GET", local + path)
        #expect(download.status == 200 && [UInt8](download.body) == fileBytes)
        #expect(try await SileoHTTP.call("GET", local + path).status == 403)

        // The merchant refunds the checkout: Tollgate asks Antom's refund, Antom's signed refund result
        // comes through the webhook route, and the package is no longer purchased.
        antom.set(FakeAntom.RefundMode.inProcess)
        let refund = try await HTTP.request("POST", local + "/v1/checkouts/\(checkout)/refund",
                                            headers: ["Authorization": "Bearer sileo-dev-walk-token-0123"], body: "")
        #expect(refund.status == 202, "\(refund.body)")
        let refundRequestId = try #require(antom.seen.last?.body?["refundRequestId"]?.string)
        #expect(antom.seen.last?.signatureVerified == true && antom.seen.last?.body?["paymentId"]?.string == "pay-\(reference)")
        #expect(try await notifyRefund(local: local, refundRequestId: refundRequestId, platform: platform).status == 200)
        try await waitUntilPurchased(vendor: vendor, token: alice.token, expected: false)
        #expect(try await SileoHTTP.call("POST", vendor + "/user_info", json: #"{"token":"BEARER \#(alice.token)"}"#).json["items"]?.array?.isEmpty == true)
        #expect(try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download", json: #"{"token":"BEARER \#(alice.token)"}"#).status == 403)

        // Another user's token owns nothing; a notification of another amount entitles nobody.
        let bob = try await signIn(vendor: vendor, local: local, user: "bob", key: signInKey)
        #expect(try await SileoHTTP.call("POST", vendor + "/package/\(package)/info", json: #"{"token":"BEARER \#(bob.token)"}"#).json["purchased"]?.bool == false)
        let bobs = try await SileoHTTP.call("POST", vendor + "/package/\(package)/purchase", json: #"{"token":"BEARER \#(bob.token)","payment_secret":"\#(bob.secret)"}"#)
        #expect(bobs.json["status"]?.int64 == 1)
        let bobReference = try #require(antom.seen.last?.body?["paymentRequestId"]?.string)
        #expect(bobReference != reference)
        #expect(try await notify(local: local, reference: bobReference, amount: "1", platform: platform).status == 200)
        // Processed, and quarantined: only then does "not purchased" say anything.
        _ = try await eventually("the wrong amount quarantined") { () -> Bool? in
            let metrics = try await HTTP.request("GET", local + "/metrics").body
            return metrics.contains(#"tollgate_checkout_payments_quarantined_total{provider="alipayplus",reason="amount_mismatch"} 1"#) ? true : nil
        }
        #expect(try await SileoHTTP.call("POST", vendor + "/package/\(package)/info", json: #"{"token":"BEARER \#(bob.token)"}"#).json["purchased"]?.bool == false)
        let bobDownload = try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download", json: #"{"token":"BEARER \#(bob.token)"}"#)
        #expect(bobDownload.status == 403)
        return [alice.token, alice.secret, bob.token, bob.secret]
    }

    /// The same through a Citcon vendor: the purchase opens the merchant's payment page with the
    /// checkout's reference and IPN URL; Citcon's signed IPN for that reference entitles, its refund IPN
    /// takes the package back.
    static func citconWalk(local: String, signInKey: PrivateKey) async throws -> [String] {
        let vendor = local + upiBase
        let carol = try await signIn(vendor: vendor, local: local, user: "carol", key: signInKey)
        let purchase = try await SileoHTTP.call("POST", vendor + "/package/\(package)/purchase",
                                                json: #"{"token":"BEARER \#(carol.token)","payment_secret":"\#(carol.secret)"}"#)
        #expect(purchase.json["status"]?.int64 == 1, "\(String(decoding: purchase.body, as: UTF8.self))")
        let page = try #require(URLComponents(string: purchase.json["url"]?.string ?? ""))
        #expect(page.host == "pay.example.com" && page.path == "/upi")
        #expect(page.queryItems?.first { $0.name == "shop" }?.value == "1")
        #expect(page.queryItems?.first { $0.name == "ipn" }?.value == "https://pay.example.com/webhooks/citcon/\(CheckoutDevTests.account)")
        let reference = try #require(page.queryItems?.first { $0.name == "reference" }?.value)

        #expect(try await CheckoutDevTests.ipn(local, reference: reference, id: "ch_sileo_1", type: "charge", amount: "2500").status == 200)
        try await waitUntilPurchased(vendor: vendor, token: carol.token, expected: true)
        let authorized = try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download", json: #"{"token":"BEARER \#(carol.token)"}"#)
        let path = String(try #require(authorized.json["url"]?.string).dropFirst("https://repo.example".count))
        #expect([UInt8](try await SileoHTTP.call("GET", local + path).body) == fileBytes)
        #expect(try await SileoHTTP.call("GET", local + path).status == 403)

        #expect(try await CheckoutDevTests.ipn(local, reference: reference, id: "rf_sileo_1", type: "refund", amount: "2500").status == 200)
        try await waitUntilPurchased(vendor: vendor, token: carol.token, expected: false)
        #expect(try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download", json: #"{"token":"BEARER \#(carol.token)"}"#).status == 403)
        return [carol.token, carol.secret]
    }

    /// Sileo's sign-in: /authenticate, the merchant's page (played here: it signs who signed in with the
    /// nonce it was given and sends the browser back), the completion with the browser's cookie.
    static func signIn(vendor: String, local: String, user: String, key: PrivateKey,
                       signInHost: String = "login.example") async throws -> (token: String, secret: String) {
        let start = try await SileoHTTP.call("GET", vendor + "/authenticate?udid=4e1243bd22c66e76c2ba9eddc1f91394e57f9f83&model=iPhone7%2C2")
        try #require(start.status == 302)
        let cookie = try #require(start.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let page = try #require(URLComponents(string: start.location))
        #expect(page.host == signInHost)
        let nonce = try #require(page.queryItems?.first { $0.name == "nonce" }?.value)
        let back = try #require(page.queryItems?.first { $0.name == "return_url" }?.value)
        struct Header: Encodable { var alg = "ES256"; var typ = "JWT" }
        struct Claims: Encodable { var sub, name, email, nonce: String; var iat, exp: Int64 }
        let now = Timestamp.now.millisecondsSince1970 / 1000
        let assertion = try #require(CompactJWS.signed(header: Header(), claims: Claims(sub: user, name: user, email: "\(user)@example.com",
                                                                                       nonce: nonce, iat: now, exp: now + 120),
                                                       sign: { key.signES256($0) }))
        // The return URL is the vendor's public one; the test reaches the same route locally.
        let completion = try #require(URLComponents(string: back))
        let done = try await SileoHTTP.call("GET", local + completion.path + "?assertion=" + assertion, cookie: cookie)
        try #require(done.status == 302, "\(String(decoding: done.body, as: UTF8.self))")
        let callback = try #require(URLComponents(string: done.location))
        try #require(callback.scheme == "sileo" && callback.host == "authentication_success")
        let token = try #require(callback.queryItems?.first { $0.name == "token" }?.value)
        let secret = try #require(callback.queryItems?.first { $0.name == "payment_secret" }?.value)
        return (String(token.dropFirst("BEARER ".count)), secret)
    }

    static func notify(local: String, reference: String, amount: String, platform: PrivateKey,
                       clientId: String = clientId) async throws -> HTTP.Response {
        try await signedNotification(local: local, platform: platform, clientId: clientId, body: #"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"},"paymentRequestId":"\#(reference)","paymentId":"pay-\#(reference)","paymentAmount":{"currency":"USD","value":"\#(amount)"},"paymentTime":"\#(Timestamp.now.rfc3339)"}"#)
    }

    /// Antom's notifyRefund: the refund Tollgate asked for succeeded.
    static func notifyRefund(local: String, refundRequestId: String, platform: PrivateKey,
                             clientId: String = clientId) async throws -> HTTP.Response {
        try await signedNotification(local: local, platform: platform, clientId: clientId, body: #"{"notifyType":"REFUND_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success."},"refundStatus":"SUCCESS","refundRequestId":"\#(refundRequestId)","refundId":"\#(FakeAntom.refundId(refundRequestId))","refundAmount":{"currency":"USD","value":"199"},"refundTime":"\#(Timestamp.now.rfc3339)"}"#)
    }

    static func signedNotification(local: String, platform: PrivateKey, clientId: String = clientId, body: String) async throws -> HTTP.Response {
        let time = Timestamp.now.rfc3339
        let signature = try #require(platform.signRSASHA256(FakeAntom.content(path: "/webhooks/alipayplus", clientId: clientId, time: time,
                                                                              body: Array(body.utf8))))
        return try await HTTP.request("POST", local + "/webhooks/alipayplus", headers: [
            "Content-Type": "application/json", "Client-Id": clientId, "Request-Time": time,
            "Signature": "algorithm=RSA256,keyVersion=1,signature=\(FakeAntom.urlEncode(Base64.encodeStandard(signature)))"], body: body)
    }

    static func waitUntilPurchased(vendor: String, token: String, expected: Bool, package: String = package) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let info = try await SileoHTTP.call("POST", vendor + "/package/\(package)/info", json: #"{"token":"BEARER \#(token)"}"#)
            if info.json["purchased"]?.bool == expected { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("package info never said purchased: \(expected)")
    }
}
