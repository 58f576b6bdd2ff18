/// `checkouts`: how `POST /v1/checkouts` starts payments and how long an unpaid one waits
/// (docs/checkouts.md). The accounts themselves are the senders' (`sources.alipayplus.clients`,
/// `sources.citcon.accounts`): a checkout is paid through the account its notification comes back to.
public struct CheckoutSettings: Sendable {
    /// Where the gateway's webhook routes are reachable from outside, with any proxy prefix
    /// (`https://pay.example.com`): the notification URL each checkout hands the provider is built on it.
    /// Unset: no checkout can be started (403 `provider_not_configured`).
    public var publicBaseURL: String?
    /// How long a checkout waits for its payment before the sweeper marks it `expired`.
    public var expirySeconds = 1_800
    /// How long after its expiry an expired (never paid) checkout is kept before the sweeper deletes
    /// it; paid and refunded ones are kept.
    public var retentionDays = 30
    /// Antom's API domain for the merchant's region; the `pay` call goes to `<antomBaseURL>/ams/api/v1/payments/pay`.
    /// `https://`, or `http://` to this machine only (tests, a local proxy).
    public var antomBaseURL = "https://open-sea-global.alipay.com"
    /// Where Antom sends the payer back after paying (`paymentRedirectUrl`). Unset: `publicBaseURL`.
    public var antomRedirectURL: String?
    /// Antom's `paymentMethod.paymentMethodType` for the cashier page.
    public var antomPaymentMethodType = "ALIPAY_CN"
    /// The whole `pay` exchange, answer included; past it the checkout is refused 503 and removed.
    public var antomTimeoutMs = 10_000
    /// How far an Antom answer's signed `Response-Time` may be from this clock, either way: an older
    /// signed answer, replayed by someone in between, is refused.
    public var antomAnswerWindowSeconds = 300
    public init() {}
}
