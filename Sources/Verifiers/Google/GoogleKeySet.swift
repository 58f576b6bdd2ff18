import Events
import Rejections
import Synchronization
import Toolkit

/// Google's OIDC signing keys by `kid`, from a file (read once) or a URL fetched through the injected
/// `HTTPFetcher`. Fetched keys are used for the response's `Cache-Control: max-age` (their cache
/// lifetime) and no longer: they are refreshed ahead of its end, a failed refresh keeps them until it
/// ends, and past it, while refreshes keep failing, tokens are refused as `key_set_unavailable` (503,
/// so Pub/Sub retries) and `/readyz` names the `google_key_set` check: a key Google withdrew (rotated
/// out, or compromised) is not trusted for longer than Google said. An unknown `kid` triggers a
/// refetch at most once per `minimumRefetchInterval`, so a flood of forged `kid`s costs Google one
/// request a minute. Documents are read at most `maxDocumentBytes`, enforced while they stream. Time
/// is the caller's `now`, so tests and `tollgate verify --at` decide it.
public final class GoogleKeySet: Sendable {
    public struct Settings: Sendable {
        public var timeout: Duration
        /// Least time between two fetches while keys are held (unknown `kid`, failed refresh).
        public var minimumRefetchInterval: Int64
        /// Least time between two fetches while no key has ever been loaded.
        public var retryIntervalWithoutKeys: Int64
        /// Used when the response has no `max-age`; every lifetime is clamped to `minimumRefetchInterval...maxCacheAge`.
        public var defaultCacheAge: Int64
        public var maxCacheAge: Int64
        /// Google's documents are a few KB; a larger answer is refused as it streams in.
        public var maxDocumentBytes: Int

        public init(timeout: Duration = .seconds(5), minimumRefetchInterval: Int64 = 60, retryIntervalWithoutKeys: Int64 = 5,
                    defaultCacheAge: Int64 = 3_600, maxCacheAge: Int64 = 86_400, maxDocumentBytes: Int = 65_536) {
            self.timeout = timeout
            self.minimumRefetchInterval = minimumRefetchInterval
            self.retryIntervalWithoutKeys = retryIntervalWithoutKeys
            self.defaultCacheAge = defaultCacheAge
            self.maxCacheAge = maxCacheAge
            self.maxDocumentBytes = maxDocumentBytes
        }
    }

    private struct State {
        var keys: [String: PublicKey] = [:]
        /// Seconds since 1970 from which the keys are no longer used (the end of their cache lifetime).
        var expiresAt: Int64 = .min
        /// Seconds since 1970 from which a refresh is tried before use (a quarter of the lifetime, at
        /// most ten minutes, ahead of `expiresAt`), so one failed fetch does not stop verification.
        var refreshAt: Int64 = .min
        var lastAttempt: Int64?
        var lastError: String?
        var fetches = 0
        var inFlight: Task<Void, Never>?
    }

    /// Where the keys come from, for messages.
    public let origin: String
    private let fetcher: (any HTTPFetcher)?
    private let fetched: Bool
    private let settings: Settings
    private let state: Mutex<State>

    /// A fixed set, e.g. read from a file.
    public init(keys: [String: PublicKey], origin: String) {
        self.origin = origin
        fetcher = nil
        fetched = false
        settings = Settings()
        state = Mutex(State(keys: keys, expiresAt: .max, refreshAt: .max))
    }

    /// Keys fetched from `url`; with no fetcher (an offline command) every lookup fails as unavailable.
    public init(url: String, fetcher: (any HTTPFetcher)?, settings: Settings = Settings()) {
        origin = url
        self.fetcher = fetcher
        fetched = true
        self.settings = settings
        state = Mutex(State())
    }

    /// Reads a key file (JWKS or v1 PEM certificates) once.
    public static func file(_ bytes: [UInt8], path: String) throws(GoogleKeyDocument.Invalid) -> GoogleKeySet {
        GoogleKeySet(keys: try GoogleKeyDocument.keys(from: bytes), origin: path)
    }

    /// The key for `kid`, refreshing first when a refresh is due or the `kid` is unknown (if allowed).
    public func key(id: String, now: Timestamp) async throws(Rejection) -> PublicKey {
        let seconds = Self.seconds(now)
        let (cached, due) = state.withLock { ($0.keys[id], seconds >= $0.refreshAt) }
        if let cached, !due { return cached }
        if fetched { await refresh(now: seconds) }
        let (key, usable) = state.withLock { ($0.keys[id], !$0.keys.isEmpty && seconds < $0.expiresAt) }
        if !usable { throw Rejection(.keySetUnavailable, unavailable(now: seconds) ?? "no Google signing keys are usable") }
        if let key { return key }
        throw Rejection(.unknownKeyId, "kid \(Self.printable(id)) is not in the key set from \(origin)")
    }

    /// Nil while keys within their cache lifetime are held; otherwise tries to load them (rate limited)
    /// and says why it could not, under the check's name.
    public func readinessProblem(now: Timestamp) async -> String? {
        let seconds = Self.seconds(now)
        if unavailable(now: seconds) == nil { return nil }
        if fetched { await refresh(now: seconds) }
        return unavailable(now: seconds).map { "\(Self.checkName): \($0)" }
    }

    /// The check `/readyz` names when no usable key is held.
    public static let checkName = "google_key_set"

    /// Why no key can be used at `now`, or nil.
    private func unavailable(now seconds: Int64) -> String? {
        state.withLock { state in
            if state.keys.isEmpty { return "Google signing keys not loaded from \(origin): \(state.lastError ?? "not fetched yet")" }
            guard seconds >= state.expiresAt else { return nil }
            return "Google signing keys from \(origin) are past their cache lifetime (since \(Self.describe(seconds: state.expiresAt))) "
                + "and could not be refreshed: \(state.lastError ?? "not fetched yet")"
        }
    }

    /// How many fetches were started (tests and metrics).
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// One fetch at a time: concurrent callers wait for the one in flight.
    private func refresh(now: Int64) async {
        let task: Task<Void, Never>? = state.withLock { state in
            if let inFlight = state.inFlight { return inFlight }
            // Without usable keys every push is refused: try again sooner.
            let interval = state.keys.isEmpty || now >= state.expiresAt ? settings.retryIntervalWithoutKeys : settings.minimumRefetchInterval
            // A clock that went backwards does not block fetching.
            if let last = state.lastAttempt, now >= last, now - last < interval { return nil }
            state.lastAttempt = now
            state.fetches += 1
            let task = Task { await self.fetch(now: now) }
            state.inFlight = task
            return task
        }
        await task?.value
    }

    private func fetch(now: Int64) async {
        let outcome = await download()
        state.withLock { state in
            state.inFlight = nil
            switch outcome {
            case .success(let (keys, maxAge)):
                state.keys = keys
                let lifetime = min(max(maxAge ?? settings.defaultCacheAge, settings.minimumRefetchInterval), settings.maxCacheAge)
                state.expiresAt = now + lifetime
                state.refreshAt = state.expiresAt - min(lifetime / 4, 600)
                state.lastError = nil
            case .failure(let error):
                state.lastError = error.description
            }
        }
    }

    private func download() async -> Result<([String: PublicKey], Int64?), GoogleKeyDocument.Invalid> {
        guard let fetcher else {
            return .failure(.init("this command has no network access; save the key set to a file and point sources.google.jwks at it"))
        }
        let response: HTTPFetchResponse
        do {
            response = try await fetcher.fetch(HTTPFetchRequest(url: origin, headers: [("Accept", "application/json")],
                                                                timeout: settings.timeout, maxResponseBytes: settings.maxDocumentBytes))
        } catch {
            return .failure(.init(error.description))
        }
        guard response.status == 200 else { return .failure(.init("HTTP \(response.status)")) }
        do {
            let keys = try GoogleKeyDocument.keys(from: response.body)
            return .success((keys, GoogleKeyDocument.maxAge(cacheControl: response.headers["cache-control"], age: response.headers["age"])))
        } catch {
            return .failure(error)
        }
    }

    private static func describe(seconds: Int64) -> String {
        Timestamp(representableMillisecondsSince1970: seconds.multipliedReportingOverflow(by: 1000).partialValue)?.rfc3339 ?? "\(seconds) s since 1970"
    }

    private static func seconds(_ time: Timestamp) -> Int64 {
        let ms = time.millisecondsSince1970
        return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000)
    }

    /// A `kid` comes from the request: short and printable in messages, or not shown.
    static func printable(_ text: String) -> String {
        text.utf8.count <= 64 && text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" })
            ? text : "(\(text.utf8.count) bytes, not shown)"
    }
}
