// Command pulumi-resource-kubernetes serves pulumi-kubernetes' provider for the engine tier.
//
// Upstream's own main embeds a schema file generated at release time, which the Go module does not hold. The
// provider reads its schema only to answer GetSchema and to fill inputs when a resource is read without inputs
// (`pulumi import`, `.get`); this main embeds the schema.json the module's source tree carries, copied beside this
// file by the build (engine/tools/build.py), and no Terraform mapping (used only by `pulumi convert`).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var schema []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, nil)
}
