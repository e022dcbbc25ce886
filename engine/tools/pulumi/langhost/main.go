// Command pulumi-language-python is the engine tier's Python language host: the plugin the Pulumi engine starts to
// run a Python program. It runs `pulumi-language-python-exec` (beside this binary) with the project's virtualenv.
//
// Our own, because the module proxy serves no version of Pulumi's (sdk/python/cmd/pulumi-language-python is a
// module of its own, with replace lines pointing into the pulumi repository, and is not published). It answers
// what `pulumi preview|up|refresh|destroy` ask of a language host; the rest (new, convert, packages) is not
// needed by the tier and answers Unimplemented.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is stamped at build time (-X main.version=...): the Pulumi release this host is built against.
var version = "dev"

// userActionableExit is the exit code with which the exec script says it has already shown the error.
const userActionableExit = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
	exec   string
}

func main() {
	// The engine passes its own address as the one positional argument, and may add logging or tracing flags;
	// none of those change what this host does.
	var engine string
	for _, arg := range os.Args[1:] {
		if !strings.HasPrefix(arg, "-") {
			engine = arg
		}
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	server := &host{engine: engine, exec: filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, server)
			return nil
		},
	})
	if err != nil {
		fail(err)
	}
	// The engine reads the port from the first line we print.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
	os.Exit(1)
}

func (h *host) Handshake(
	context.Context, *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins and GetRequiredPackages name no plugin: the engine tier's Pulumi.yaml maps every provider to
// a local binary, which the engine loads when the program first registers a resource of it.
func (h *host) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

// InstallDependencies installs nothing: the virtualenv is made by the repository's Makefile before the engine runs.
func (h *host) InstallDependencies(
	*pulumirpc.InstallDependenciesRequest, grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	return nil
}

func (h *host) About(_ context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	python, _ := pythonOf(req.GetInfo())
	return &pulumirpc.AboutResponse{Executable: python}, nil
}

func (h *host) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

// pythonOf is the interpreter of the project's `virtualenv` runtime option (relative to the project root), and
// the virtualenv's directory; without the option, python3 on PATH.
func pythonOf(info *pulumirpc.ProgramInfo) (string, string) {
	venv, _ := info.GetOptions().AsMap()["virtualenv"].(string)
	if venv == "" {
		return "python3", ""
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(info.GetRootDirectory(), venv)
	}
	return filepath.Join(venv, "bin", "python"), venv
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	python, venv := pythonOf(info)
	program := filepath.Join(info.GetProgramDirectory(), info.GetEntryPoint())
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}
	args := []string{
		"-u", h.exec,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engine,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--organization", req.GetOrganization(),
		"--root-directory", info.GetRootDirectory(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	args = append(append(args, program), req.GetArgs()...)

	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	if venv != "" {
		cmd.Env = append(cmd.Env, "VIRTUAL_ENV="+venv,
			"PATH="+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}, nil
	case errors.As(err, &exit) && exit.ExitCode() == userActionableExit:
		return &pulumirpc.RunResponse{Bail: true}, nil
	case errors.As(err, &exit):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("the Python program exited with code %d", exit.ExitCode())}, nil
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run %s: %v", python, err)}, nil
	}
}
