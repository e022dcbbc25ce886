// Excerpt of aws/karpenter-provider-aws v1.14.1 pkg/providers/pricing/zz_generated.pricing_aws.go (Apache-2.0):
// the P, G, Inf and Trn family lines, unchanged. The pinned table is compared with these figures.

// generated at 2026-07-06T14:20:29Z for us-east-1

var InitialOnDemandPricesAWS = map[string]map[ec2types.InstanceType]float64{
	// us-east-1
	"us-east-1": {
		// g2 family
		"g2.2xlarge": 0.650000, "g2.8xlarge": 2.600000,
		// g3 family
		"g3.16xlarge": 4.560000, "g3.4xlarge": 1.140000, "g3.8xlarge": 2.280000,
		// g3s family
		"g3s.xlarge": 0.750000,
		// g4ad family
		"g4ad.16xlarge": 3.468000, "g4ad.2xlarge": 0.541170, "g4ad.4xlarge": 0.867000, "g4ad.8xlarge": 1.734000,
		"g4ad.xlarge": 0.378530,
		// g4dn family
		"g4dn.12xlarge": 3.912000, "g4dn.16xlarge": 4.352000, "g4dn.2xlarge": 0.752000, "g4dn.4xlarge": 1.204000,
		"g4dn.8xlarge": 2.176000, "g4dn.metal": 7.824000, "g4dn.xlarge": 0.526000,
		// g5 family
		"g5.12xlarge": 5.672000, "g5.16xlarge": 4.096000, "g5.24xlarge": 8.144000, "g5.2xlarge": 1.212000,
		"g5.48xlarge": 16.288000, "g5.4xlarge": 1.624000, "g5.8xlarge": 2.448000, "g5.xlarge": 1.006000,
		// g5g family
		"g5g.16xlarge": 2.744000, "g5g.2xlarge": 0.556000, "g5g.4xlarge": 0.828000, "g5g.8xlarge": 1.372000,
		"g5g.metal": 2.744000, "g5g.xlarge": 0.420000,
		// g6 family
		"g6.12xlarge": 4.601600, "g6.16xlarge": 3.396800, "g6.24xlarge": 6.675200, "g6.2xlarge": 0.977600,
		"g6.48xlarge": 13.350400, "g6.4xlarge": 1.323200, "g6.8xlarge": 2.014400, "g6.xlarge": 0.804800,
		// g6e family
		"g6e.12xlarge": 10.492640, "g6e.16xlarge": 7.577190, "g6e.24xlarge": 15.065590, "g6e.2xlarge": 2.242080,
		"g6e.48xlarge": 30.131180, "g6e.4xlarge": 3.004240, "g6e.8xlarge": 4.528560, "g6e.xlarge": 1.861000,
		// g6f family
		"g6f.2xlarge": 0.475000, "g6f.4xlarge": 0.950000, "g6f.large": 0.202000, "g6f.xlarge": 0.237500,
		// g7e family
		"g7e.12xlarge": 8.286080, "g7e.24xlarge": 16.572160, "g7e.2xlarge": 3.363120, "g7e.48xlarge": 33.144320,
		"g7e.4xlarge": 3.998160, "g7e.8xlarge": 5.268240,
		// gr6 family
		"gr6.4xlarge": 1.539200, "gr6.8xlarge": 2.446400,
		// gr6f family
		"gr6f.4xlarge": 1.066000,
		// inf1 family
		"inf1.24xlarge": 4.721000, "inf1.2xlarge": 0.362000, "inf1.6xlarge": 1.180000, "inf1.xlarge": 0.228000,
		// inf2 family
		"inf2.24xlarge": 6.490630, "inf2.48xlarge": 12.981270, "inf2.8xlarge": 1.967860, "inf2.xlarge": 0.758200,
		// p2 family
		"p2.16xlarge": 14.400000, "p2.8xlarge": 7.200000, "p2.xlarge": 0.900000,
		// p3 family
		"p3.16xlarge": 24.480000, "p3.2xlarge": 3.060000, "p3.8xlarge": 12.240000,
		// p3dn family
		"p3dn.24xlarge": 31.212000,
		// p4d family
		"p4d.24xlarge": 21.957642,
		// p4de family
		"p4de.24xlarge": 27.447050,
		// p5 family
		"p5.48xlarge": 55.040000, "p5.4xlarge": 6.880000,
		// p5en family
		"p5en.48xlarge": 63.296000,
		// p6-b200 family
		"p6-b200.48xlarge": 113.932800,
		// p6-b300 family
		"p6-b300.48xlarge": 142.416000,
		// trn1 family
		"trn1.2xlarge": 1.343750, "trn1.32xlarge": 21.500000,
		// trn1n family
		"trn1n.32xlarge": 24.780000,
	},
}
