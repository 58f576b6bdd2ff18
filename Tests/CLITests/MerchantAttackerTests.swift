import Events
import Foundation
import Toolkit
import Testing

extension DevEndToEndTests {
    /// A customer holding the app (its client credential) against the real `tollgate dev`
    /// (docs/security.md): no other user's purchases, no purchase secrets, no bare transaction ids.
    @Suite("tollgate dev: the merchant APIs against a customer holding the app")
    struct MerchantAttacker {
        @Test("the app's credential reads only its user token's user: another user's entitlements 403, no token 401; no answer names a transaction id")
        func entitlementsOfOthers() async throws {
            let dev = try DevEndToEndTests.dev()
            let victim = ApplePurchase()
            #expect(try await dev.post(try victim.subscribed(chain: dev.chain)).status == 200)
            let granted = try await dev.entitlements(user: victim.user, until: "the victim is entitled") { !$0.entitlements.isEmpty }
            // Even the merchant's own server credential gets the purchase's opaque id, never its transaction id.
            #expect(granted.entitlements.first?.purchaseId.hasPrefix("pur_") == true)
            let serverAnswer = try await dev.entitlements(user: victim.user)
            #expect(!serverAnswer.body.contains(victim.originalTransactionId), "\(serverAnswer.body)")

            let client = DevProcess.clientToken
            let noUserToken = try await dev.entitlements(user: victim.user, token: client)
            #expect(noUserToken.status == 401 && noUserToken.body.contains(#""error":"user_token_required""#), "\(noUserToken.body)")
            let attacker = "attacker-\(UUID().uuidString)"
            let asAttacker = try await dev.entitlements(user: victim.user, token: client, userToken: DevProcess.userToken(attacker))
            #expect(asAttacker.status == 403 && asAttacker.body.contains(#""error":"user_not_allowed""#), "\(asAttacker.body)")
            #expect(!asAttacker.body.contains(victim.originalTransactionId))
            // A token the backend did not sign, or for another app, names nobody.
            let otherApp = try await dev.entitlements(user: victim.user, token: client, userToken: DevProcess.userToken(victim.user, app: "com.example.other"))
            #expect(otherApp.status == 401 && otherApp.body.contains(#""error":"invalid_user_token""#), "\(otherApp.body)")

            // The victim's own app, with the victim's token, reads the victim's entitlements.
            let own = try await dev.entitlements(user: victim.user, token: client, userToken: DevProcess.userToken(victim.user))
            #expect(own.status == 200, "\(own.body)")
            #expect(!own.body.contains(victim.originalTransactionId))
            // Unknown users and users entitled to nothing answer alike: the client learns not who exists.
            let unknown = try await dev.entitlements(user: attacker, token: client, userToken: DevProcess.userToken(attacker))
            #expect(unknown.status == 200, "\(unknown.body)")
            let unknownBody = try JSONDecoder().decode(EntitlementsBody.self, from: unknown.data)
            #expect(unknownBody.entitlements.isEmpty && unknownBody.user == attacker)
        }

        @Test("the app's credential cannot report a bare transaction id (another customer's), with or without a user token")
        func bareTransactionId() async throws {
            let dev = try DevEndToEndTests.dev()
            let victim = ApplePurchase()
            let attacker = "attacker-\(UUID().uuidString)"
            let body = #"{"app":"\#(DevProcess.bundleId)","user":"\#(attacker)","apple":{"transactionId":"\#(victim.originalTransactionId)"}}"#
            let answer = try await HTTP.request("POST", dev.baseURL + "/v1/purchases",
                                                headers: ["Authorization": "Bearer \(DevProcess.clientToken)", "Content-Type": "application/json",
                                                          "Tollgate-User-Token": DevProcess.userToken(attacker)], body: body)
            #expect(answer.status == 403 && answer.body.contains(#""error":"proof_of_possession_required""#), "\(answer.body)")
            let noToken = try await HTTP.request("POST", dev.baseURL + "/v1/purchases",
                                                 headers: ["Authorization": "Bearer \(DevProcess.clientToken)", "Content-Type": "application/json"],
                                                 body: body)
            #expect(noToken.status == 401 && noToken.body.contains(#""error":"user_token_required""#), "\(noToken.body)")
            // /v1/validate with the app's api.tokens client credential: its user token's user too (only
            // the validator key, all a cordova-plugin-purchase app can be set up with, links without one).
            let validate = try await HTTP.request(
                "POST", dev.baseURL + "/v1/validate?appName=\(DevProcess.bundleId)",
                headers: ["Authorization": "Bearer \(DevProcess.clientToken)", "Content-Type": "application/json"],
                body: #"{"id":"pro","transaction":{"type":"ios-appstore","jwsRepresentation":"a.b.c"},"additionalData":{"applicationUsername":"\#(victim.user)"}}"#)
            // A bearer-token caller (a backend, not the plugin's validator URL) gets the refusal's status.
            #expect(validate.status == 401 && validate.body.contains(#""status":401"#) && validate.body.contains(#""error":"user_token_required""#),
                    "\(validate.body)")
        }
    }
}

extension DevEndToEndTests.MerchantAttacker {
    @Test("the support route gives a server credential the store's ids behind each purchase id; a client credential is refused")
    func supportRoute() async throws {
        let dev = try DevEndToEndTests.dev()
        let customer = ApplePurchase()
        #expect(try await dev.post(try customer.subscribed(chain: dev.chain)).status == 200)
        let granted = try await dev.entitlements(user: customer.user, until: "the customer is entitled") { !$0.entitlements.isEmpty }
        let url = dev.baseURL + "/v1/users/\(customer.user)/purchases?app=\(DevProcess.bundleId)&environment=sandbox"
        let client = try await HTTP.request("GET", url, headers: ["Authorization": "Bearer \(DevProcess.clientToken)",
                                                                  "Tollgate-User-Token": DevProcess.userToken(customer.user)])
        #expect(client.status == 403 && client.body.contains(#""error":"server_credential_required""#), "\(client.body)")
        let server = try await HTTP.request("GET", url, headers: ["Authorization": "Bearer \(DevProcess.apiToken)"])
        #expect(server.status == 200, "\(server.body)")
        let purchases = try #require(JSONValue.parse(Array(server.body.utf8))?["purchases"]?.array)
        #expect(purchases.count == 1)
        #expect(purchases.first?["subject"]?.string == customer.originalTransactionId)
        #expect(purchases.first?["purchaseId"]?.string == granted.entitlements.first?.purchaseId)
    }
}
