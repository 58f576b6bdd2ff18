import Rejections

/// Why the operator console refused a request (docs/console.md). Answered as an HTML page naming the
/// reason, counted in `tollgate_console_rejections_total{reason}`.
public enum ConsoleReason: String, ReasonCode, CaseIterable {
    /// No session cookie, or one that is not a session of a configured operator.
    case signInRequired = "sign_in_required"
    /// The session's time (`console.sessionMinutes`) is over.
    case sessionExpired = "session_expired"
    /// The credential given at sign-in is not an operator credential of `api.tokens`.
    case invalidCredential = "invalid_credential"
    /// More failed sign-ins than the console takes (10 a second, 30 at once, for every address together).
    case tooManySignIns = "too_many_sign_ins"
    /// A form posted without its session's CSRF token, or with another one.
    case csrfTokenInvalid = "csrf_token_invalid"
    /// A read-only operator (`actions: false`) posted an action.
    case actionNotAllowed = "action_not_allowed"
    /// A form or query the page cannot read (missing field, too long, not a form).
    case invalidRequest = "invalid_request"
    /// No such purchase, user or page.
    case notFound = "not_found"
    /// The store cannot answer now.
    case storeUnavailable = "store_unavailable"

    public static let domain = "console"

    public var httpStatus: Int {
        switch self {
        case .signInRequired, .sessionExpired, .invalidCredential: 401
        case .csrfTokenInvalid, .actionNotAllowed: 403
        case .invalidRequest: 400
        case .notFound: 404
        case .tooManySignIns: 429
        case .storeUnavailable: 503
        }
    }
}
