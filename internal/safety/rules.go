package safety

// The rule table of the built-in screen. Each pattern is a regular expression over normalized
// text (see normalize): lower case, no accents, apostrophes dropped, words separated by one
// space, "," at a comma and "|" at a sentence end. Two shorthands keep the table readable:
// "~" stands for up to three arbitrary words, and "$" for the end of a clause. A pattern is
// matched on whole words only.
//
// The rules favour precision: a phrase goes in only when ordinary talk in an anxiety lesson
// ("I feel like I'm dying when I panic", "me muero de nervios", "this exam is killing me", "I
// want to disappear when the teacher calls on me") does not use it. Hyperbole is excluded by
// `unless` (what follows the match in its clause) and denials by `negatable` (a negation in the
// three words before the match, in the same clause). The evaluation corpus in
// testdata/safety holds the phrases each rule is for and the lesson talk it must stay silent on.

// family is the people a learner names when describing being hurt at home.
const familyEN = `(?:my )?(?:dad|father|mom|mum|mother|stepdad|stepfather|stepmom|stepmother|parents|brother|sister|uncle|aunt|grandpa|grandfather|grandma|grandmother|boyfriend|girlfriend|moms boyfriend|mums boyfriend|dads girlfriend|foster (?:dad|mom|parents))`
const familyES = `(?:mi |mis )?(?:padre|madre|papa|mama|padrastro|madrastra|padres|hermano|hermana|tio|tia|abuelo|abuela|novio|novia|pareja|primo|prima)`
const otherEN = `(?:my )?(?:friend|best friend|bff|classmate|brother|sister|cousin|boyfriend|girlfriend|teammate|roommate|someone i know)`
const otherES = `(?:mi |una |un )?(?:amiga|amigo|mejor amiga|mejor amigo|companera|companero|hermano|hermana|prima|primo|novio|novia)`
const hyperboleEN = `(?:of|from|laughing|lol|haha|lmao|because of (?:this|the) (?:exam|test|homework))`
const hyperboleES = `(?:de|del|a|jaja|jajaja|estudiando|trabajando)`

var ruleTable = []ruleSpec{
	// English: suicide, direct.
	{id: "en.direct.kill_myself", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:kill|killing|killed) myself|(?:end|ending|take|taking) my (?:own )?life|(?:end|ending) it all`},
	{id: "en.direct.want_to_die", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `i ~(?:want|wanna|wish|am going|m going|gonna|plan|planning|ready) (?:to )?die`, unless: hyperboleEN},
	{id: "en.direct.suicidal", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:i|im|i am|ive|i have) ~(?:suicidal|suicide note|goodbye note)|i ~(?:think|thinking|thought|thoughts) (?:about|of) (?:suicide|killing myself|ending my life|dying)|i ~(?:commit|committing) suicide`},
	{id: "en.direct.jump", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:going|gonna|about|want|plan|planning) to jump (?:off|from) (?:the|a|this|my) ~(?:bridge|roof|building|balcony|window|cliff)`},
	// English: suicide, passive.
	{id: "en.passive.not_alive", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:dont|do not|no longer) want to (?:be alive|exist|keep living|go on living)|(?:dont|do not) want to (?:live|be here) (?:anymore|any more)|(?:dont|do not) want to live $`},
	{id: "en.passive.wish_dead", cat: CategorySuicide, sev: SeverityHigh,
		re: `wish (?:that )?i (?:was|were|could be|had been) (?:dead|never born)|wish i (?:had never|hadnt|had not|was never|wasnt|werent) (?:been )?born|(?:hope|wish) i (?:dont|do not|wont|never|wouldnt) wake up|(?:sleep|go to sleep|fall asleep) (?:and|forever and) never wake up|(?:want|wish i could) (?:to )?(?:sleep|disappear) forever`},
	{id: "en.passive.no_point", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:life|living|my life) (?:isnt|is not|aint|is no longer) worth (?:it|living)|(?:no|whats the|what is the|dont see the|cant see the) point (?:in |of )?(?:living|being alive|my life|going on)|(?:nothing|no reason|no one|nobody) (?:left )?to live for|no reason to (?:live|keep living|go on)|(?:tired|sick) of (?:living|being alive)`},
	// English: suicide, indirect.
	{id: "en.indirect.better_off", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:everyone|everybody|people|the world|my family|my parents|my friends|they|you all) (?:would|will|d) (?:all )?be better (?:off )?without me`},
	{id: "en.indirect.miss_me", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:no one|noone|nobody) (?:would|will|is going to|d) (?:even )?(?:miss me|notice if i (?:was|were|am) gone|care if i (?:died|was gone|were gone|was dead|disappeared|wasnt here))`},
	{id: "en.indirect.giving_away", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:giving|gave|given|give) away (?:all )?(?:of )?my (?:things|stuff|belongings|possessions)|(?:giving|gave|given) (?:all )?(?:of )?my (?:things|stuff|belongings|possessions) away`},
	{id: "en.indirect.burden", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re: `(?:im|i am) (?:just )?(?:a|such a) burden (?:to|on|for) (?:everyone|everybody|my family|my parents|everyone around me)`},
	{id: "en.indirect.not_around", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:wont|will not) be (?:around|here) (?:much longer|for much longer|for long)`},
	// English: self-harm.
	{id: "en.self_harm.cutting", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re:     `i ~(?:cut|burn|burned|burnt) (?:myself|my (?:arms|wrists|legs|skin|thighs))|(?:cutting|burning|scratching) (?:myself|my (?:arms|wrists|legs|skin|thighs))|i ~(?:self harm|selfharm|self harming|self harmed|self injure)`,
		unless: `(?:while|by accident|accidentally|on (?:a|the|some)|shaving|cooking)`},
	{id: "en.self_harm.want", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re: `(?:want|wanna|urge|urges|going|gonna|need) (?:to )?(?:hurt|harm|cut|punish) myself`},
	// English: abuse.
	{id: "en.abuse.hits_me", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: familyEN + ` ~(?:hits|hit|beats|beat|punches|punched|kicks|kicked|slaps|slapped|chokes|choked|abuses|abused|burns) me`},
	{id: "en.abuse.abused", cat: CategoryAbuse, sev: SeverityHigh, negatable: true,
		re: `(?:i|im|i am|i was|ive been|i have been|i get|i got|being) ~(?:sexually abused|abused|molested|raped|sexually assaulted|beaten up at home)`},
	{id: "en.abuse.unsafe_home", cat: CategoryAbuse, sev: SeverityHigh,
		re: `(?:dont|do not|never) feel safe (?:at home|in my (?:house|home)|with my (?:dad|mom|mum|parents|stepdad|stepmom))|(?:im|i am) not safe at home|(?:scared|afraid|terrified) (?:to go|of going) (?:back )?home`},
	// English: immediate danger.
	{id: "en.danger.overdose", cat: CategoryDanger, sev: SeverityImminent,
		re: `i (?:just )?(?:took|swallowed|have taken|ve taken|overdosed on) (?:a (?:whole )?bottle of|all (?:of )?(?:my|the)|too many|a bunch of|a lot of|[0-9]+) ~(?:pills|tablets|meds|medication|painkillers)`},
	{id: "en.danger.threat", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:threatening|threatened|threatens) to (?:kill|hurt|stab|shoot) me|(?:pointing|pointed|has) a (?:gun|knife) at me|(?:breaking|broke) into (?:my|our) (?:house|home|apartment|flat)|(?:is|are|s|re) trying to (?:kill|hurt|rape) me`},
	// English: concern for someone else.
	{id: "en.other.kill_self", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re: `(?:kill|killing|hurt|hurting|harm|harming|cut|cutting) (?:himself|herself|themselves|themself)|(?:end|ending|take|taking) (?:his|her|their) (?:own )?life`},
	{id: "en.other.suicidal", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re: otherEN + ` ~(?:is|seems|has been|s been|might be|sounds|feels) (?:suicidal|self harming)|` + otherEN + ` ~(?:wants|want|wanted|is going|plans) to die`},
	{id: "en.other.abused", cat: CategoryConcernOther, sev: SeverityConcern, negInside: true,
		re: otherEN + `s (?:dad|mom|mum|father|mother|stepdad|parents|uncle) ~(?:hits|beats|abuses|punches) (?:him|her|them)`},

	// Spanish: suicide, direct.
	{id: "es.direct.matarme", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re:     `(?:quiero|voy a|pienso|pensando en|ganas de|intentar|decidi|planeando|necesito) (?:\w+ )?(?:matarme|suicidarme|quitarme la vida)|me (?:quiero|voy a|pienso|gustaria|dan ganas de|quisiera) (?:matar|suicidar|quitar la vida)|(?:acabar|terminar) con mi vida`,
		unless: hyperboleES},
	{id: "es.direct.morir", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:me quiero|quiero|quisiera|me quisiera|ganas de) morir(?:me)?`, unless: hyperboleES},
	{id: "es.direct.suicida", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:tengo|he tenido|tener) ~(?:pensamientos|ideas|ideacion) suicidas?|pienso (?:mucho )?en (?:el suicidio|suicidarme)|carta (?:de despedida|de suicidio) (?:porque|para)`},
	{id: "es.direct.saltar", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:voy a|quiero|pienso) (?:saltar|tirarme|lanzarme) (?:(?:de|desde|por) (?:el|la|un|una|mi)|del) (?:puente|edificio|balcon|ventana|azotea|tejado)`},
	// Spanish: suicide, passive.
	{id: "es.passive.no_quiero_vivir", cat: CategorySuicide, sev: SeverityHigh,
		re: `no quiero (?:seguir )?(?:viviendo|existiendo|existir|estar viva|estar vivo)|no quiero vivir $|no quiero vivir mas $|no quiero (?:despertar|despertarme) (?:nunca|mas|nunca mas)`},
	{id: "es.passive.ojala", cat: CategorySuicide, sev: SeverityHigh,
		re: `ojala (?:que )?(?:no (?:despertara|despertase|me despertara|me despierte|hubiera nacido|existiera|existiese)|me muriera|me muera|estuviera muert[oa]|me durmiera y no despertara)`},
	{id: "es.passive.sin_sentido", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:la vida|vivir|mi vida) no (?:vale|tiene) (?:la pena|sentido)|no (?:tengo|hay) (?:razones|motivos|nada|ninguna razon|ningun motivo) (?:para|por (?:el|la) que) (?:vivir|seguir viviendo)|no le (?:veo|encuentro) sentido a (?:la vida|vivir|seguir viviendo|mi vida)|(?:cansad[oa]|hart[oa]) de vivir|(?:dormir|dormirme) y no despertar|(?:dormir|desaparecer) para siempre|(?:prefiero|preferiria) estar muert[oa]`},
	// Spanish: suicide, indirect.
	{id: "es.indirect.mejor_sin_mi", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:todos|todo el mundo|mi familia|mis padres|la gente|mis amigos) (?:estarian|estaria|estaran|estara|vivirian|viviria) mejor sin mi`},
	{id: "es.indirect.nadie", cat: CategorySuicide, sev: SeverityHigh,
		re: `nadie me (?:extranaria|echaria de menos|extranara|echara de menos)|(?:a )?nadie le (?:importaria|importara) si (?:me muriera|me muero|desapareciera|no estuviera)`},
	{id: "es.indirect.regalando", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:regalando|regale|he regalado|regalado) (?:todas )?(?:mis cosas|mis pertenencias)`},
	{id: "es.indirect.carga", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re: `soy (?:solo )?una carga (?:para|a) (?:todos|todo el mundo|mi familia|mis padres|los demas)`},
	// Spanish: self-harm.
	{id: "es.self_harm.cortarme", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re: `me (?:corto|corte|cortaba|he cortado|quemo|queme|he quemado) (?:los brazos|las munecas|las piernas|la piel|los muslos)|(?:quiero|ganas de|necesito|voy a) (?:cortarme|hacerme dano|lastimarme|autolesionarme|quemarme)|me (?:hago|hice|he hecho) dano (?:a proposito|a mi mism[oa]|yo mism[oa])|me (?:autolesiono|autolesione|he autolesionado)`},
	// Spanish: abuse.
	{id: "es.abuse.me_pega", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: familyES + ` ~(?:me pega|me pegan|me golpea|me golpean|me maltrata|me maltratan|me pego|me golpeo|me ahorca|me da palizas|me dio una paliza|abusa de mi|abuso de mi)`},
	{id: "es.abuse.abusaron", cat: CategoryAbuse, sev: SeverityHigh, negatable: true,
		re: `(?:abusaron|han abusado|ha abusado) de mi|me (?:han|ha) (?:violado|abusado)|me violaron`},
	{id: "es.abuse.casa", cat: CategoryAbuse, sev: SeverityHigh,
		re: `no me siento (?:segur[oa]) en (?:casa|mi casa)|no estoy (?:segur[oa]) en (?:casa|mi casa)|(?:tengo miedo|me da miedo) (?:de )?(?:volver|ir|regresar) a (?:casa|mi casa)`},
	// Spanish: immediate danger.
	{id: "es.danger.pastillas", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:me tome|me he tomado|acabo de tomar|me acabo de tomar|tome) (?:un bote de|todo el bote de|todas (?:las|mis)|muchas|un monton de|[0-9]+) ~(?:pastillas|pildoras|medicamentos|medicinas|calmantes)`},
	{id: "es.danger.amenaza", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:me amenaza|me amenazo|me esta amenazando) con (?:matarme|pegarme|hacerme dano|apunalarme)|(?:alguien|un hombre|un tipo|unos hombres) (?:ha entrado|entro|esta entrando|se ha metido) en (?:mi casa|casa|nuestra casa)|(?:esta|estan) intentando (?:matarme|violarme)`},
	// Spanish: concern for someone else.
	{id: "es.other.matarse", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re:     `(?:matarse|suicidarse|quitarse la vida|autolesionarse)|se (?:quiere|va a|piensa) (?:matar|suicidar|quitar la vida)|` + otherES + ` ~(?:se corta|se autolesiona|se hace dano|se esta cortando)|` + otherES + ` ~(?:quiere|quiera) morir(?:se)?`,
		unless: hyperboleES},
	{id: "es.other.le_pega", cat: CategoryConcernOther, sev: SeverityConcern, negInside: true,
		re: `a ` + otherES + ` (?:su|sus) (?:padre|madre|padrastro|padres|tio) (?:le pega|la pega|lo pega|le golpea|la golpea|lo golpea|la maltrata|lo maltrata)`},

	// Output, English: instructions.
	{id: "en.output.method", cat: CategorySelfHarmInstructions, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:painless|easiest|best|quickest|most effective|surest) (?:way|method|ways|methods) to (?:kill yourself|die|end your life|commit suicide|overdose)|(?:lethal|fatal|deadly) (?:dose|amount) (?:of|is)|(?:how|here is how|heres how) to (?:kill yourself|hang yourself|overdose|cut yourself|slit your)|(?:make|tie|tying|making) a noose|(?:cut|slit|slice) (?:along |across )?(?:your|the) (?:wrists?|veins|arteries|throat)|(?:you could|you can|you should|try to|just) (?:hang yourself|overdose|slit your|jump off)`},
	// Output, English: encouragement.
	{id: "en.output.encourage", cat: CategorySelfHarmEncouragement, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:you should|go ahead and|why dont you|just) (?:just )?(?:kill yourself|end it|die)|(?:everyone|everybody|the world|your family) (?:would|will) be better (?:off )?without you|(?:nobody|no one) (?:would|will) (?:even )?miss you`},
	// Output, Spanish: instructions.
	{id: "es.output.method", cat: CategorySelfHarmInstructions, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:forma|manera|metodo|modo) (?:mas )?(?:facil|rapida|rapido|segura|seguro|indolora|indoloro)? ?(?:de|para) (?:suicidarte|matarte|quitarte la vida|ahorcarte|morir)|(?:como|para) (?:suicidarte|ahorcarte|cortarte las venas)|(?:cortate|corta|cortarte) (?:las venas|las munecas)|dosis (?:letal|mortal)|(?:tirate|lanzate|puedes tirarte|podrias tirarte) (?:de|desde|por)`},
	// Output, Spanish: encouragement.
	{id: "es.output.encourage", cat: CategorySelfHarmEncouragement, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:deberias|tienes que|podrias|simplemente) (?:matarte|suicidarte|morirte|quitarte la vida)|(?:todos|todo el mundo|tu familia|el mundo) (?:estarian|estaria) mejor sin ti|nadie te (?:extranaria|echaria de menos)`},
}
