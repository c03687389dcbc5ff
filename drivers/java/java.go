// Package java locates the grpc-java driver (Driver.java, grpc-java with
// grpc-netty from Debian's libgrpc-java) for the host side: its source, the
// jars the Debian packages install, the installed grpc-java's version, and
// the exact command that installs the packages when something is missing
// (system packages: conform cannot install them into its cache). Compiling
// the driver into conform's cache is harness/driver's (java.go).
package java

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Source is Driver.java.
//
//go:embed Driver.java
var Source []byte

// MainClass is the class conform runs.
const MainClass = "Driver"

// Packages are the Debian packages the driver needs: grpc-java's API, core
// and Netty transport; Netty itself (its separate jars: grpc-netty 1.41
// does not load with netty-all.jar); gson, which reads the protocol's JSON;
// perfmark, which grpc-core calls; and a JDK to compile and run it.
var Packages = []string{"libgrpc-java", "libnetty-java", "libgoogle-gson-java", "libperfmark-java", "default-jdk-headless"}

// InstallCommand installs what the driver needs (as root, on Debian).
var InstallCommand = "apt-get update && apt-get install -y " + strings.Join(Packages, " ")

// JarDir is where Debian's Java packages put their jars.
const JarDir = "/usr/share/java"

// jars are the class path's jars in JarDir, by the package that installs
// each.
var jars = []struct{ name, pkg string }{
	{"grpc-api.jar", "libgrpc-java"},
	{"grpc-context.jar", "libgrpc-java"},
	{"grpc-core.jar", "libgrpc-java"},
	{"grpc-netty.jar", "libgrpc-java"},
	{"guava.jar", "libguava-java (a dependency of libgrpc-java)"},
	{"gson.jar", "libgoogle-gson-java"},
	{"perfmark-api.jar", "libperfmark-java"},
	{"netty-buffer.jar", "libnetty-java"},
	{"netty-codec.jar", "libnetty-java"},
	{"netty-codec-http.jar", "libnetty-java"},
	{"netty-codec-http2.jar", "libnetty-java"},
	{"netty-codec-socks.jar", "libnetty-java"},
	{"netty-common.jar", "libnetty-java"},
	{"netty-handler.jar", "libnetty-java"},
	{"netty-handler-proxy.jar", "libnetty-java"},
	{"netty-resolver.jar", "libnetty-java"},
	{"netty-transport.jar", "libnetty-java"},
}

// System is what the Debian packages installed: grpc-java's package
// version, the jars, and the JDK's programs.
type System struct {
	// Version is libgrpc-java's Debian version ("1.41.3+ds-1").
	Version string
	// ClassPath are the jars, in order.
	ClassPath []string
	// Java and Javac are the JDK's programs.
	Java, Javac string
}

// GRPCVersion is grpc-java's own version, the Debian version without its
// revision and repack suffix ("1.41.3").
func (s System) GRPCVersion() string {
	v := s.Version
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:] // an epoch
	}
	if i := strings.IndexAny(v, "+-~"); i >= 0 {
		v = v[:i]
	}
	return v
}

// Check finds the packages' version, jars and JDK, or says which packages
// are missing and the command that installs them.
func Check(ctx context.Context) (System, error) {
	var s System
	var missing []string
	addMissing := func(pkg string) {
		for _, m := range missing {
			if m == pkg {
				return
			}
		}
		missing = append(missing, pkg)
	}
	v, err := packageVersion(ctx, "libgrpc-java")
	if err != nil {
		addMissing("libgrpc-java")
	}
	s.Version = v
	for _, j := range jars {
		p := filepath.Join(JarDir, j.name)
		if _, err := os.Stat(p); err != nil {
			addMissing(j.pkg)
			continue
		}
		s.ClassPath = append(s.ClassPath, p)
	}
	for _, prog := range []struct {
		name string
		dst  *string
	}{{"java", &s.Java}, {"javac", &s.Javac}} {
		p, err := exec.LookPath(prog.name)
		if err != nil {
			addMissing("default-jdk-headless")
			continue
		}
		*prog.dst = p
	}
	if len(missing) > 0 {
		return System{}, fmt.Errorf("grpc-java driver: missing Debian packages %s; install them with: %s",
			strings.Join(missing, ", "), InstallCommand)
	}
	return s, nil
}

// packageVersion is an installed Debian package's version.
func packageVersion(ctx context.Context, pkg string) (string, error) {
	cmd := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Status}\t${Version}", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-query %s: %v: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	status, version, _ := strings.Cut(string(out), "\t")
	if !strings.HasSuffix(status, " installed") || version == "" {
		return "", errors.New(pkg + " is not installed (" + status + ")")
	}
	return version, nil
}

// JVMFlags make the JVM start fast on a small machine: one GC thread, the
// quick compiler only, the JDK's class-data archive when there is one.
var JVMFlags = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}

// Compile compiles Driver.java against the packages' jars, writing its
// classes into classes (which javac creates).
func Compile(ctx context.Context, s System, classes string) error {
	src, err := os.MkdirTemp("", "conform-java-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	file := filepath.Join(src, MainClass+".java")
	if err := os.WriteFile(file, Source, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, s.Javac, "-nowarn", "-encoding", "UTF-8", "-d", classes,
		"-cp", strings.Join(s.ClassPath, string(os.PathListSeparator)), file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2048 {
			msg = "…" + msg[len(msg)-2048:]
		}
		return fmt.Errorf("javac: %v: %s", err, msg)
	}
	return nil
}

// WarmUpEnv, set to 1 in the driver's environment, makes it call a server
// of its own over loopback before hello (Driver.java says why): set only
// where conform starts it, inside the lab's client namespace.
const WarmUpEnv = "CONFORM_JAVA_WARM_UP=1"

// Args are java's arguments that run the driver compiled into classes.
func Args(s System, classes string) []string {
	cp := strings.Join(append([]string{classes}, s.ClassPath...), string(os.PathListSeparator))
	return append(append([]string{}, JVMFlags...), "-cp", cp, MainClass)
}
