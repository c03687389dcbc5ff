package driver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// goList is a module proxy's list for grpc-go, unordered, with
// pre-releases, as `go list -m -versions` gives it.
func goList(context.Context, string) ([]string, error) {
	return []string{"v1.57.2", "v1.55.0", "v1.55.1", "v1.56.0-dev", "v1.56.3", "v1.56.0", "v1.57.0", "v1.58.0-pre1", "v1.58.0"}, nil
}

func jsList(context.Context, string) ([]string, error) {
	return []string{"1.8.0", "1.8.21", "1.9.0", "1.9.15", "1.10.0-rc.1", "1.10.0", "1.10.1"}, nil
}

func versionsOf(rs []Release) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Version)
	}
	return out
}

func TestExpandRange_LatestPatchOfEachMinor(t *testing.T) {
	got, err := ExpandRange(context.Background(), "grpc-go@v1.55.0..v1.58.0", false, goList)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1.55.1", "v1.56.3", "v1.57.2", "v1.58.0"}; !slices.Equal(versionsOf(got), want) {
		t.Errorf("got %v, want %v", versionsOf(got), want)
	}
}

func TestExpandRange_EndInsideAMinorIsTheLastOfIt(t *testing.T) {
	got, err := ExpandRange(context.Background(), "grpc-js@1.8.0..1.10.0", false, jsList)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1.8.21", "1.9.15", "1.10.0"}; !slices.Equal(versionsOf(got), want) {
		t.Errorf("got %v, want %v", versionsOf(got), want)
	}
}

func TestExpandRange_EveryPatchSkipsPreReleases(t *testing.T) {
	got, err := ExpandRange(context.Background(), "grpc-go@v1.56.0..v1.58.0", true, goList)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1.56.0", "v1.56.3", "v1.57.0", "v1.57.2", "v1.58.0"}; !slices.Equal(versionsOf(got), want) {
		t.Errorf("got %v, want %v", versionsOf(got), want)
	}
}

func TestExpandRange_OneVersion(t *testing.T) {
	got, err := ExpandRange(context.Background(), "grpc-go@v1.57.0..v1.57.0", false, goList)
	if err != nil || !slices.Equal(versionsOf(got), []string{"v1.57.0"}) {
		t.Errorf("got %v, %v; want [v1.57.0]", versionsOf(got), err)
	}
}

func TestExpandRange_ClearErrors(t *testing.T) {
	for arg, want := range map[string]string{
		"grpc-go@v1.55.0..v1.99.0":     "v1.99.0 is not a release (nearest: v1.58.0; newest: v1.58.0)",
		"grpc-go@v1.56.1..v1.58.0":     "v1.56.1 is not a release (nearest: v1.56.0, v1.56.3",
		"grpc-go@v1.56.0-dev..v1.58.0": "v1.56.0-dev is not a release",
		"grpc-go@v1.58.0..v1.55.0":     "the range runs backwards: v1.58.0 is later than v1.55.0",
		"grpc-go@1.55.0..v1.58.0":      "not a grpc-go module version",
		"grpc-go@v1.55.0..":            "a range is name@FIRST..LAST",
		"grpcio@1.0..2.0":              "only grpc-go and grpc-js have version ranges",
		"grpc-js@1.9.1..1.10.1":        "1.9.1 is not a release (nearest: 1.9.0, 1.9.15",
	} {
		_, err := ExpandRange(context.Background(), arg, false, func(ctx context.Context, n string) ([]string, error) {
			if n == GRPCJS {
				return jsList(ctx, n)
			}
			return goList(ctx, n)
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", arg, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), strings.SplitN(arg, "..", 2)[0][:7]) {
			t.Errorf("%s: error %q does not name the implementation", arg, err)
		}
	}
}

func TestExpandRange_ListFailureIsTheError(t *testing.T) {
	boom := errors.New("proxy down")
	_, err := ExpandRange(context.Background(), "grpc-go@v1.55.0..v1.58.0", false, func(context.Context, string) ([]string, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}

func TestCheckRelease(t *testing.T) {
	ctx := context.Background()
	if err := CheckRelease(ctx, Release{Name: GRPCGo, Version: "v1.57.2"}, goList); err != nil {
		t.Errorf("v1.57.2: %v", err)
	}
	err := CheckRelease(ctx, Release{Name: GRPCGo, Version: "v9.9.9"}, goList)
	if err == nil || !strings.Contains(err.Error(), `impl "grpc-go@v9.9.9": v9.9.9 is not a release (nearest: v1.58.0`) {
		t.Errorf("v9.9.9: got %v", err)
	}
	if err := CheckRelease(ctx, Release{Name: GRPCIO}, goList); err != nil {
		t.Errorf("grpcio: %v", err)
	}
}

func TestIsRange(t *testing.T) {
	for arg, want := range map[string]bool{"grpc-go@v1.55.0..v1.85.0": true, "grpc-go@v1.85.0": false, "grpcio": false, "a..b": false} {
		if IsRange(arg) != want {
			t.Errorf("IsRange(%q) = %v", arg, !want)
		}
	}
}
