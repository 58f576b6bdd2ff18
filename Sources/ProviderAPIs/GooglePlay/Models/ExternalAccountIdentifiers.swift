extension SubscriptionPurchaseV2 {
    /// Who the purchase belongs to in the app's own account system, as the app passed it to Play Billing.
    public struct ExternalAccountIdentifiers: Decodable, Sendable, Equatable {
        public let externalAccountId: String?
        public let obfuscatedExternalAccountId: String?
        public let obfuscatedExternalProfileId: String?
    }
}
