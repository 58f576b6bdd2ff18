import Events

extension SubscriptionPurchaseV2 {
    /// Set only while `SUBSCRIPTION_STATE_PAUSED`.
    public struct PausedStateContext: Decodable, Sendable, Equatable {
        public let autoResumeTime: Timestamp?

        private enum CodingKeys: String, CodingKey { case autoResumeTime }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            autoResumeTime = try c.decodeTimestampIfPresent(forKey: .autoResumeTime)
        }
    }

    /// Set for a canceled (or expired after cancellation) subscription: who canceled it. Exactly
    /// one of the four is present; their details beyond the user's cancel time are not modelled.
    public struct CanceledStateContext: Decodable, Sendable, Equatable {
        public let userInitiatedCancellation: UserInitiatedCancellation?
        public let systemInitiatedCancellation: Marker?
        public let developerInitiatedCancellation: Marker?
        public let replacementCancellation: Marker?

        public struct UserInitiatedCancellation: Decodable, Sendable, Equatable {
            public let cancelTime: Timestamp?

            private enum CodingKeys: String, CodingKey { case cancelTime }

            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                cancelTime = try c.decodeTimestampIfPresent(forKey: .cancelTime)
            }
        }
    }

    /// An object whose presence is the information (its fields, if any, are ignored).
    public struct Marker: Decodable, Sendable, Equatable {}

    /// `TestPurchase`: an empty object, present for a license tester's purchase.
    public typealias TestPurchase = Marker
}
