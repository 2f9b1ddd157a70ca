package toulmin

import "testing"

func TestPlausible(t *testing.T) {
	tests := []struct {
		step, text string
		want       bool
	}{
		{StepClaim, "Cities should ban cars downtown.", true},
		{StepClaim, "Las ciudades deberían prohibir los coches.", true},
		{StepClaim, "Ban cars.", false},
		{StepClaim, "Should cities ban cars downtown?", false},
		{StepClaim, "¿Deberían las ciudades prohibir coches?", false},
		{StepClaim, "   ", false},

		{StepGrounds, "Air pollution fell 30% after Madrid's ban.", true},
		{StepGrounds, "La contaminación bajó un 30% en Madrid.", true},
		{StepGrounds, "Pollution fell a lot", false},
		{StepGrounds, "Bajó la contaminación", false},

		{StepWarrant, "Cleaner air matters because it saves lives.", true},
		{StepWarrant, "Less pollution means fewer asthma attacks in children.", true},
		{StepWarrant, "If pollution drops, public health improves.", true},
		{StepWarrant, "El aire limpio importa porque salva vidas.", true},
		{StepWarrant, "Menos contaminación significa menos asma infantil.", true},
		{StepWarrant, "Si baja la contaminación, mejora la salud.", true},
		{StepWarrant, "Clean air is very good for people.", false},
		{StepWarrant, "El aire limpio es muy bueno.", false},
		{StepWarrant, "because it is", false},

		{StepGroundsBacking, "The data comes from the EU environment agency.", true},
		{StepGroundsBacking, "Los datos vienen de la agencia europea.", true},
		{StepGroundsBacking, "EU agency data", false},

		{StepWarrantBacking, "WHO research links particulates to asthma.", true},
		{StepWarrantBacking, "Estudios de la OMS lo confirman claramente.", true},
		{StepWarrantBacking, "WHO says so", false},

		{StepQualifier, "Probably", true},
		{StepQualifier, "In most cases", true},
		{StepQualifier, "This usually holds for large cities.", true},
		{StepQualifier, "En la mayoría de los casos", true},
		{StepQualifier, "Generalmente", true},
		{StepQualifier, "Casi siempre", true},
		{StepQualifier, "Always, no doubt", false},
		{StepQualifier, "Siempre", false},
		{StepQualifier, "", false},

		{StepRebuttal, "Unless public transport is poor.", true},
		{StepRebuttal, "Critics say small shops lose customers.", true},
		{StepRebuttal, "However, deliveries become harder.", true},
		{StepRebuttal, "A menos que el transporte público sea malo.", true},
		{StepRebuttal, "Sin embargo, los comercios pierden clientes.", true},
		{StepRebuttal, "Los críticos dicen que perjudica al comercio.", true},
		{StepRebuttal, "Shops lose customers.", false},
		{StepRebuttal, "Los comercios pierden clientes.", false},
		{StepRebuttal, "but no", false},

		{"nonsense", "Anything at all goes here.", false},
	}
	for _, tt := range tests {
		t.Run(tt.step+"/"+tt.text, func(t *testing.T) {
			if got := plausible(tt.step, tt.text); got != tt.want {
				t.Errorf("plausible(%q, %q) = %v, want %v", tt.step, tt.text, got, tt.want)
			}
		})
	}
}
