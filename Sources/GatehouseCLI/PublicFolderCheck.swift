import Glibc

/// `check`'s line about `GATEHOUSE_PUBLIC_DIR`: a relative folder is read from the working
/// directory of `serve`, which is easy to get wrong from a service manager or a container.
enum PublicFolderCheck {
    static func line(for folder: String) -> String {
        let shown = folder.hasPrefix("/") ? "\"\(folder)\"" : "\"\(folder)\" (relative to \(workingDirectory))"
        var status = stat()
        guard stat(folder, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            return "warn public dir \(shown): not found; the SPA is not served (/ answers 404); set GATEHOUSE_PUBLIC_DIR"
        }
        var index = stat()
        let hasIndex = stat(folder + "/index.html", &index) == 0
        return "ok   public dir \(shown)\(hasIndex ? "" : ": no index.html")"
    }

    private static var workingDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "the working directory" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
