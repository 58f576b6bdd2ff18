import Config
import Testing
import Verifiers

@Suite("Configuration: Google")
struct GoogleConfigTests {
    func error(_ yaml: String, environment: [String: String] = [:]) -> ConfigError? {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml, environment: environment)
            return nil
        } catch {
            return error
        }
    }

    @Test("audience, service account, packages and a key set file or URL are read; the default key set is Google's JWKS")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              google:
                audience: https://tollgate.example.com/webhooks/google
                serviceAccountEmail: rtdn-push@my-project.iam.gserviceaccount.com
                packages: [com.some.thing, com.some.app]
            """)
        let google = config.sources.google
        #expect(google.audience == "https://tollgate.example.com/webhooks/google")
        #expect(google.serviceAccountEmail == "rtdn-push@my-project.iam.gserviceaccount.com")
        #expect(google.packages == ["com.some.thing", "com.some.app"])
        #expect(google.jwks == "https://www.googleapis.com/oauth2/v3/certs")
        let overridden = try SenderCatalog.standard.parseConfig(yaml: "", environment: [
            "TOLLGATE_SOURCES_GOOGLE_AUDIENCE": "a", "TOLLGATE_SOURCES_GOOGLE_SERVICE_ACCOUNT_EMAIL": "b@c",
            "TOLLGATE_SOURCES_GOOGLE_PACKAGES": "[p]", "TOLLGATE_SOURCES_GOOGLE_JWKS": "/etc/tollgate/google-certs.json"])
        #expect(overridden.sources.google.jwks == "/etc/tollgate/google-certs.json")
        #expect(overridden.sources.google.packages == ["p"])
    }

    @Test("a partial Google configuration, an empty package or a non-HTTP URL is refused, naming the key")
    func refused() {
        #expect(error("sources: { google: { audience: a, serviceAccountEmail: b@c } }")?.key == "sources.google.packages")
        #expect(error("sources: { google: { audience: a, packages: [p] } }")?.key == "sources.google.serviceAccountEmail")
        #expect(error("sources: { google: { serviceAccountEmail: b@c, packages: [p] } }")?.key == "sources.google.audience")
        #expect(error(#"sources: { google: { audience: a, serviceAccountEmail: b@c, packages: [""] } }"#)?.key == "sources.google.packages")
        #expect(error("sources: { google: { audience: a, serviceAccountEmail: b@c, packages: [p], jwks: 'ftp://x/certs' } }")?.key == "sources.google.jwks")
        // Plain HTTP is refused at load, in any case of the scheme.
        for url in ["http://www.googleapis.com/oauth2/v3/certs", "HTTP://127.0.0.1:8080/certs"] {
            let refused = error("sources: { google: { audience: a, serviceAccountEmail: b@c, packages: [p], jwks: '\(url)' } }")
            #expect(refused?.key == "sources.google.jwks", "\(url)")
            #expect(refused?.message.contains("https://") == true)
        }
        #expect(error("sources: { google: { audience: a, serviceAccountEmail: b@c, packages: [p], jwksUrl: x } }")?.key == "sources.google.jwksUrl")
        #expect(error("sources: { google: {} }") == nil)
    }
}
