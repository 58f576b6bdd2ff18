import Foundation

/// A short, safe summary of a Google error body for error messages: the API's
/// `{"error": {"code", "message", "status"}}` or the token endpoint's `{"error", "error_description"}`.
/// Neither carries credentials; anything else is summarised by its length only.
enum GoogleErrorBody {
    static func summary(_ body: [UInt8]) -> String {
        guard !body.isEmpty else { return "empty body" }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return "\(body.count)-byte body that is not JSON"
        }
        if let error = object["error"] as? [String: Any] {
            let status = error["status"] as? String
            let message = error["message"] as? String
            return clip([status, message].compactMap { $0 }.joined(separator: ": "))
        }
        if let error = object["error"] as? String {
            let detail = object["error_description"] as? String
            return clip([error, detail].compactMap { $0 }.joined(separator: ": "))
        }
        return "JSON body without an error object"
    }

    private static func clip(_ text: String) -> String {
        text.isEmpty ? "no error detail" : String(text.prefix(300))
    }
}
